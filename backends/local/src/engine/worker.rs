//! The engine thread's state: the loaded model, the prefix pool and the model's health. It
//! serves one request at a time, classifies every failure, poisons and reloads on device
//! faults, and checks each reload with a canary.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::{Duration, Instant};

use candle_core::Device;
use hearth_backend::{Progress, Usage};
use tracing::{error, info, warn};

use crate::chat::render_chatml;
use crate::engine::generate::{GenState, GenerateCtx, Plan, ROOM_AFTER_PROMPT};
use crate::engine::health::{CanaryCell, Health, HealthCell};
use crate::engine::pool::{ColdCause, PrefixPool, Sequence, Taken};
use crate::engine::prefix_store::{DEFAULT_BUDGET_BYTES, PrefixStore};
use crate::engine::process::Isolation;
use crate::engine::sink::{Sink, Terminal};
use crate::engine::{EngineConfig, EngineEvent, GenerateRequest, Prompt};
use crate::error::EngineError;
use crate::fault::FaultClass;
use crate::fault::{DeviceFaultKind, device_fault_kind};
use crate::grammar::{CallGrammar, Vocab};
use crate::inject::Seam;
use crate::model::{KvCache, LoadStage, Model, ModelFiles};
use crate::sampler::{Sampler, SamplingParams};
use crate::tokenizer::TextTokenizer;

/// The fixed prompt whose greedy continuation proves a reloaded model computes what the first
/// load computed.
const CANARY_PROMPT: &str = "def add(a, b):\n    return";
const CANARY_TOKENS: usize = 4;
const RELOAD_WINDOW: Duration = Duration::from_secs(600);

pub(crate) struct Worker {
    config: EngineConfig,
    device: Device,
    tokenizer: Arc<TextTokenizer>,
    health: HealthCell,
    model: Option<Model>,
    pool: PrefixPool,
    /// System turns saved for later sessions, once a model is loaded (where configured).
    store: Option<PrefixStore>,
    /// The canary's greedy tokens, recorded by the first load (or given by the config);
    /// shared with the [`crate::Engine`] handle.
    canary: CanaryCell,
    reloads: Vec<Instant>,
    chunk: usize,
    max_context: usize,
    /// Every token's bytes, built on the first request that constrains its calls.
    vocab: Option<Arc<Vocab>>,
}

impl Worker {
    pub fn new(
        config: EngineConfig,
        device: Device,
        tokenizer: Arc<TextTokenizer>,
        health: HealthCell,
        canary: CanaryCell,
        max_context: usize,
    ) -> Self {
        let chunk = config
            .prefill_chunk
            .unwrap_or_else(|| crate::device::default_prefill_chunk(&device))
            .max(1);
        let pool = PrefixPool::new(config.cache_budget_bytes, config.max_cached_sequences);
        Self {
            config,
            device,
            tokenizer,
            health,
            model: None,
            pool,
            store: None,
            canary,
            reloads: Vec::new(),
            chunk,
            max_context,
            vocab: None,
        }
    }

    /// The first load; on failure the model stays failed (nothing is left allocated).
    pub fn start(&mut self) {
        match self.load_checked() {
            Ok(model) => {
                self.store = self.config.prefix_dir.as_deref().and_then(|root| {
                    let path = &self.config.model_path;
                    PrefixStore::open(root, path, &model, &self.tokenizer, DEFAULT_BUDGET_BYTES)
                });
                self.model = Some(model);
                self.health.set(Health::Healthy);
                info!(path = %self.config.model_path.display(), "model loaded");
            }
            Err(err) => {
                error!(%err, "model load failed");
                self.health.set(Health::Failed {
                    reason: err.to_string(),
                });
            }
        }
    }

    /// Loads the weights (transactionally: a failure drops everything read) and runs the
    /// canary: the first load records its output, later loads must reproduce it.
    fn load_checked(&mut self) -> Result<Model, EngineError> {
        let health = self.health.clone();
        let faults = self.config.faults.clone();
        let mut hook = |stage: LoadStage| {
            if let LoadStage::Block { n, total } = stage {
                let fraction = n as f32 / total.max(1) as f32;
                if matches!(health.get(), Health::Loading { .. }) {
                    health.set(Health::Loading { fraction });
                }
            }
            faults.check(Seam::Load(stage))
        };
        let model = ModelFiles::at(&self.config.model_path).load(&self.device, &mut hook)?;
        // The file's metadata (the tokenizer's vocabulary and merges, tens of MiB) and the
        // tensors as read are freed by now, but would stay resident on the heap.
        crate::memory::release_freed();
        let output = self.run_canary(&model)?;
        match self.canary.get() {
            None => self.canary.set(output),
            Some(expected) if expected == output => {}
            Some(expected) => {
                return Err(EngineError::Load {
                    path: self.config.model_path.display().to_string(),
                    message: format!("canary mismatch: {output:?} != {expected:?}"),
                });
            }
        }
        Ok(model)
    }

    fn run_canary(&self, model: &Model) -> Result<Vec<u32>, EngineError> {
        let prompt = self.tokenizer.encode(CANARY_PROMPT)?;
        let mut cache = KvCache::new(model.config(), self.max_context, model.device());
        let mut sampler = Sampler::new(SamplingParams::greedy());
        let mut logits = model.forward(&prompt, &mut cache)?;
        let mut out = Vec::with_capacity(CANARY_TOKENS);
        for _ in 0..CANARY_TOKENS {
            self.config.faults.check(Seam::Canary)?;
            let token = sampler.sample(&mut logits.to_vec1::<f32>()?, &out)?;
            out.push(token);
            logits = model.forward(&[token], &mut cache)?;
        }
        Ok(out)
    }

    /// Serves one request to its single terminal event.
    pub fn handle(&mut self, req: GenerateRequest, sink: Sink) {
        if let Some(error) = self.health.refusal() {
            return sink.finish(Terminal::Failed {
                error,
                partial: String::new(),
            });
        }
        if req.cancel.is_cancelled() || sink.is_closed() {
            return sink.finish(Terminal::Cancelled);
        }
        let prompt = match self.tokenize(&req.prompt) {
            Ok(p) => p,
            Err(error) => {
                return sink.finish(Terminal::Failed {
                    error,
                    partial: String::new(),
                });
            }
        };
        if let Err(error) = self.validate(&prompt) {
            return sink.finish(Terminal::Failed {
                error,
                partial: String::new(),
            });
        }
        self.generate(req, prompt, sink);
    }

    fn tokenize(&self, prompt: &Prompt) -> Result<Vec<u32>, EngineError> {
        let tokenizer = &self.tokenizer;
        let run = || match prompt {
            Prompt::Messages(messages) => {
                let text = render_chatml(messages, tokenizer.default_system());
                tracing::trace!(prompt = %text, "rendered prompt");
                tokenizer.encode(&text)
            }
            Prompt::Text(text) => tokenizer.encode(text),
            Prompt::Tokens(tokens) => Ok(tokens.clone()),
        };
        catch_unwind(AssertUnwindSafe(run)).unwrap_or_else(|p| Err(panic_error(p)))
    }

    fn validate(&self, prompt: &[u32]) -> Result<(), EngineError> {
        if prompt.is_empty() {
            return Err(EngineError::InvalidRequest("empty prompt".into()));
        }
        if let Some(model) = &self.model {
            let vocab = model.config().vocab_size;
            if let Some(&id) = prompt.iter().find(|&&t| t as usize >= vocab) {
                return Err(EngineError::TokenOutOfRange { id, vocab });
            }
        }
        if prompt.len() >= self.max_context {
            return Err(EngineError::ContextOverflow {
                needed: prompt.len() + 1,
                limit: self.max_context,
            });
        }
        Ok(())
    }

    fn generate(&mut self, req: GenerateRequest, prompt: Vec<u32>, sink: Sink) {
        let Some(model) = self.model.as_ref() else {
            let error = EngineError::Failed("no model loaded".into());
            return sink.finish(Terminal::Failed {
                error,
                partial: String::new(),
            });
        };
        let max_context = self.max_context;
        let fresh = || KvCache::new(model.config(), max_context, model.device());
        let turn = self.store.as_ref().and_then(|s| s.system_turn(&prompt));
        let taken = match take(&mut self.pool, self.store.as_mut(), &prompt, turn, fresh) {
            Ok(t) => t,
            Err(error) => {
                return sink.finish(Terminal::Failed {
                    error,
                    partial: String::new(),
                });
            }
        };
        if let Some(cause) = taken.cold {
            info!("cold_prefill cause={}", cause.as_str());
            sink.send(EngineEvent::Progress(Progress::ColdPrefill {
                reason: cause.as_str().to_string(),
            }));
        }
        let mut seq = taken.seq;
        let vocab = (!req.call_tools.is_empty() || req.answer_only).then(|| {
            let tokenizer = &self.tokenizer;
            self.vocab
                .get_or_insert_with(|| Arc::new(Vocab::new(tokenizer)))
                .clone()
        });
        let calls = vocab.as_ref().and_then(|vocab| {
            CallGrammar::new(&req.call_tools, vocab.clone())
                .map(|g| g.holding_bare_calls(req.bare_calls))
        });
        let plan = Plan {
            prompt: &prompt,
            reused: taken.reused,
            max_tokens: req
                .max_tokens
                .unwrap_or(usize::MAX)
                .min(max_context - prompt.len()),
            sampling: &req.sampling,
            stop: &req.stop,
            calls: calls.as_ref(),
            answer_only: vocab.as_ref().filter(|_| req.answer_only),
            call_first: req.call_first && !req.answer_only,
        };
        let ctx = GenerateCtx {
            model,
            tokenizer: &self.tokenizer,
            sink: &sink,
            faults: &self.config.faults,
            cancel: &req.cancel,
            chunk: self.chunk,
        };
        let mut state = GenState::default();
        let result = catch_unwind(AssertUnwindSafe(|| ctx.run(&mut seq, &plan, &mut state)))
            .unwrap_or_else(|p| Err(panic_error(p)));
        let usage = Usage {
            prompt_tokens: prompt.len() as u32,
            completion_tokens: state.completion_tokens as u32,
            cached_tokens: Some(taken.reused as u32),
        };
        self.finish(result, seq, turn, state, usage, sink);
    }

    /// Ends the request; `turn` is where its prompt's system turn ends, for the store.
    fn finish(
        &mut self,
        result: Result<hearth_backend::FinishReason, EngineError>,
        seq: Sequence,
        turn: Option<usize>,
        state: GenState,
        usage: Usage,
        sink: Sink,
    ) {
        let error = match result {
            Ok(reason) => {
                self.keep(seq, turn);
                sink.send(EngineEvent::Usage(usage));
                return sink.finish(Terminal::Done(reason));
            }
            Err(EngineError::Cancelled) => {
                // The cache holds only fully computed tokens: keep it for the next round.
                self.keep(seq, turn);
                return sink.finish(Terminal::Cancelled);
            }
            Err(error) => error,
        };
        let class = error.class();
        warn!(%error, ?class, "generation failed");
        // Any failure after device work began resets the sequence; after a device fault the
        // whole model reloads, which is the cause the next round reports.
        if state.device_work_started {
            let cause = if class == FaultClass::Device {
                ColdCause::Reload
            } else {
                ColdCause::FailedGeneration
            };
            self.pool.record(seq.tokens, cause);
        }
        let sticky = match &error {
            EngineError::Tensor(e) => device_fault_kind(e) == Some(DeviceFaultKind::StickyCuda),
            _ => false,
        };
        let cause = error.to_string();
        if class == FaultClass::Device {
            // Refuse new work before the caller learns of the failure.
            self.health.set(Health::Poisoned {
                cause: cause.clone(),
            });
        }
        sink.finish(Terminal::Failed {
            error,
            partial: state.emitted,
        });
        if class == FaultClass::Device {
            self.recover(cause, sticky);
        }
    }

    /// Keeps a sequence whose tokens are all computed for the next request, and saves its
    /// system turn for later sessions. Before the request's terminal event, not after: a
    /// `hearth run` exits as soon as it has its answer. A new turn is written once per
    /// process, tens of milliseconds for the 0.5B's.
    fn keep(&mut self, seq: Sequence, turn: Option<usize>) {
        if let (Some(store), Some(turn)) = (self.store.as_mut(), turn)
            && catch_unwind(AssertUnwindSafe(|| store.save(&seq, turn))).is_err()
        {
            error!("prefix store panicked while saving; it is off until the engine restarts");
            self.store = None;
        }
        self.pool.put(seq);
    }

    /// Poisoned: drop the model and every cache, then reload. A sticky CUDA fault no
    /// in-process reload can fix: a worker process ends for its supervisor to replace it, and
    /// an engine on a thread gives up.
    fn recover(&mut self, cause: String, sticky: bool) {
        error!(%cause, "model poisoned");
        self.model = None;
        self.pool.clear(ColdCause::Reload);
        crate::memory::release_freed();
        // In a worker a sticky code ends the process even on the CPU, where only fault
        // injection produces one: that is how the restart path is tested without a GPU.
        if sticky && self.config.isolation == Isolation::Worker {
            self.health.set(Health::Restarting { cause });
            return;
        }
        if sticky && self.device.is_cuda() {
            self.health.set(Health::Failed {
                reason: format!("{cause}; the CUDA context is lost, restart hearth"),
            });
            return;
        }
        loop {
            let now = Instant::now();
            self.reloads
                .retain(|t| now.duration_since(*t) < RELOAD_WINDOW);
            if self.reloads.len() >= self.config.max_reloads {
                self.health.set(Health::Failed {
                    reason: format!(
                        "{cause}; reload limit reached ({} reloads in {} s)",
                        self.reloads.len(),
                        RELOAD_WINDOW.as_secs()
                    ),
                });
                return;
            }
            self.reloads.push(now);
            match self.load_checked() {
                Ok(model) => {
                    info!("model reloaded after a device fault");
                    self.model = Some(model);
                    self.health.set(Health::Healthy);
                    return;
                }
                Err(err) => warn!(%err, "reload failed"),
            }
        }
    }
}

/// The sequence `prompt` runs on: the pool's, unless the store has more of its system turn
/// (`prompt[..turn]`) on disk than any cached sequence holds.
fn take(
    pool: &mut PrefixPool,
    store: Option<&mut PrefixStore>,
    prompt: &[u32],
    turn: Option<usize>,
    fresh: impl Fn() -> KvCache,
) -> Result<Taken, EngineError> {
    if let (Some(store), Some(turn)) = (store, turn) {
        let shared = pool.shared(prompt);
        let room = prompt.len() - turn + ROOM_AFTER_PROMPT;
        // A panic here (a bug, whatever the file held) costs the disk, not the request.
        let load = || store.load(prompt, turn, shared, fresh(), room);
        if shared < turn
            && let Some(seq) = catch_unwind(AssertUnwindSafe(load)).unwrap_or_else(|_| {
                error!("prefix store panicked while reading; the prompt is read instead");
                None
            })
        {
            let reused = seq.tokens.len();
            return Ok(Taken {
                seq,
                reused,
                cold: None,
            });
        }
    }
    pool.take(prompt, fresh)
}

fn panic_error(payload: Box<dyn std::any::Any + Send>) -> EngineError {
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    EngineError::Panic(msg)
}

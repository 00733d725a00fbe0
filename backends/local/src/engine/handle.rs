//! [`Engine`]: starts the engine thread and hands it requests.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::sync::mpsc;
use std::thread;

use hearth_backend::Progress;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tracing::info;

use crate::engine::health::{CanaryCell, Health, HealthCell};
use crate::engine::process::{Isolation, Supervisor};
use crate::engine::sink::{Sink, Terminal};
use crate::engine::worker::Worker;
use crate::engine::{EngineConfig, EngineEvent, GenerateRequest};
use crate::error::EngineError;
use crate::model::{Arch, ModelFiles};
use crate::tokenizer::TextTokenizer;

/// What is known about the served model before its weights finish loading.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSummary {
    pub id: String,
    pub path: std::path::PathBuf,
    pub arch: Arch,
    /// The context the engine serves (the model's, capped by the config).
    pub context_length: usize,
    pub quantization: String,
    pub device: String,
}

enum Command {
    Generate(Box<GenerateRequest>, Sink),
}

/// Who owns the model.
enum Runner {
    /// A dedicated OS thread of this process; requests go over a channel.
    Thread(mpsc::Sender<Command>),
    /// A supervised worker process (see [`crate::engine::process`]).
    Process(Supervisor),
}

/// The running engine: a dedicated OS thread (or a worker process) owns the model; requests
/// go over a channel and events stream back. Dropping the engine lets the thread finish its
/// current request and exit, or ends the worker process.
pub struct Engine {
    runner: Runner,
    /// Requests handed to the engine thread and not yet answered (the one being served
    /// included): what a new request waits behind.
    pending: Arc<AtomicUsize>,
    pub(crate) health: HealthCell,
    canary: CanaryCell,
    summary: ModelSummary,
    tokenizer: Arc<TextTokenizer>,
}

impl Engine {
    /// Reads the model's header and tokenizer (fast), then loads the weights on the engine
    /// thread. Returns before the weights are in; [`Engine::health`] tells when they are.
    /// Blocks for the header read: call from a blocking context.
    pub fn spawn(config: EngineConfig) -> Result<Self, EngineError> {
        let files = ModelFiles::at(&config.model_path);
        let header = files.header()?;
        let tokenizer = Arc::new(header.tokenizer);
        let model_config = header.config;
        let context_length = config.max_context.map_or(model_config.context_length, |m| {
            m.min(model_config.context_length)
        });
        let id = config
            .model_id
            .clone()
            .unwrap_or_else(|| ModelFiles::default_id(&config.model_path));
        let model_path = config.model_path.clone();
        let health = HealthCell::new(Health::Loading { fraction: 0.0 });
        let canary = CanaryCell::new(config.expected_canary.clone());
        let (runner, device) = match &config.isolation {
            Isolation::Process(command) => {
                // The parent never opens the device: a lost CUDA context stays in the worker.
                let device = format!(
                    "{} (engine worker process)",
                    crate::device::describe_choice(config.device)
                );
                let command = command.clone();
                let supervisor =
                    Supervisor::start(config, command, health.clone(), canary.clone())?;
                (Runner::Process(supervisor), device)
            }
            Isolation::Thread | Isolation::Worker => {
                let device = crate::device::open(config.device)?;
                let described = crate::device::describe(&device);
                let worker = Worker::new(
                    config,
                    device,
                    tokenizer.clone(),
                    health.clone(),
                    canary.clone(),
                    context_length,
                );
                (Runner::Thread(start_thread(worker)?), described)
            }
        };
        let summary = ModelSummary {
            id,
            path: model_path,
            arch: model_config.arch,
            context_length,
            quantization: header.quantization,
            device,
        };
        Ok(Self {
            runner,
            pending: Arc::new(AtomicUsize::new(0)),
            health,
            canary,
            summary,
            tokenizer,
        })
    }

    /// Queues a request; its events arrive on the returned receiver, ending with exactly one
    /// terminal event. A poisoned or failed model answers at once with an error. A request
    /// that has others in front of it first gets [`Progress::Queued`].
    pub fn submit(&self, request: GenerateRequest) -> UnboundedReceiver<EngineEvent> {
        let (tx, rx) = unbounded_channel();
        let sink = Sink::new(tx);
        if let Some(error) = self.health.refusal() {
            sink.finish(Terminal::Failed {
                error,
                partial: String::new(),
            });
            return rx;
        }
        let tx = match &self.runner {
            Runner::Thread(tx) => tx,
            // The worker's own engine counts what is queued and says so.
            Runner::Process(supervisor) => {
                supervisor.submit(request, sink);
                return rx;
            }
        };
        let (sink, ahead) = sink.counted(self.pending.clone());
        if ahead > 0 {
            // Sent before the request is queued, so it always precedes the request's own
            // events.
            sink.send(EngineEvent::Progress(Progress::Queued {
                ahead: u32::try_from(ahead).unwrap_or(u32::MAX),
            }));
        }
        // If the thread is gone the command comes back and dropping its sink ends the
        // stream with an error.
        let _ = tx.send(Command::Generate(Box::new(request), sink));
        rx
    }

    /// The worker process's id when the engine runs in one (and one is running).
    pub fn worker_pid(&self) -> Option<u32> {
        match &self.runner {
            Runner::Thread(_) => None,
            Runner::Process(supervisor) => supervisor.pid(),
        }
    }

    pub fn health(&self) -> Health {
        self.health.get()
    }

    /// The greedy tokens of the canary prompt, once the first load recorded them: every
    /// reload, and every replacement worker process, must reproduce them.
    pub fn canary(&self) -> Option<Vec<u32>> {
        self.canary.get()
    }

    pub fn summary(&self) -> &ModelSummary {
        &self.summary
    }

    pub fn tokenizer(&self) -> &TextTokenizer {
        &self.tokenizer
    }

    /// Blocks until the model is loaded (or failed to load), polling its health.
    pub fn wait_ready(&self, timeout: std::time::Duration) -> Health {
        let start = std::time::Instant::now();
        loop {
            let h = self.health.get();
            if !matches!(h, Health::Loading { .. }) || start.elapsed() > timeout {
                return h;
            }
            thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

/// Starts the engine thread: it loads the model, then serves requests until the engine drops.
///
/// The model's math runs inside a rayon pool of the engine's own, entered once per request:
/// there every parallel op (candle's and hearth-kernels') hands its parts to the pool's other
/// threads while the engine's share runs on a pool thread itself. Called from outside a pool,
/// each of the hundreds of ops per token woke a sleeping worker and left a third thread
/// waiting; on 2 cores that cost 15–20% of decode speed (measured with examples/decode).
fn start_thread(mut worker: Worker) -> Result<mpsc::Sender<Command>, EngineError> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(candle_core::utils::get_num_threads())
        .thread_name(|i| format!("hearth-math-{i}"))
        .build()
        .map_err(|e| EngineError::EngineGone(format!("cannot start the engine's threads: {e}")))?;
    let (tx, rx) = mpsc::channel::<Command>();
    thread::Builder::new()
        .name("hearth-engine".into())
        .spawn(move || {
            pool.install(|| worker.start());
            while let Ok(Command::Generate(req, sink)) = rx.recv() {
                pool.install(|| worker.handle(*req, sink));
            }
            info!("engine thread exits");
        })?;
    Ok(tx)
}

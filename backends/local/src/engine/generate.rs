//! One request's generation on one sequence: chunked prefill, then sample/decode steps, with
//! cancellation checked between every chunk and step.

use hearth_backend::{FinishReason, Progress};
use tracing::{debug, instrument};

use crate::engine::EngineEvent;
use crate::engine::pool::Sequence;
use crate::engine::sink::Sink;
use crate::error::EngineError;
use crate::grammar::{CallConstraint, CallGrammar, TextOnly, Vocab};
use crate::inject::{FaultPlan, Seam};
use crate::model::Model;
use crate::sampler::{Sampler, SamplingParams};
use crate::stop::StopMatcher;
use crate::tokenizer::TextTokenizer;

/// What an answer that must be a call opens with (Hermes).
const CALL_OPEN: &str = "<tool_call>";
/// Tokens the cache makes room for past the prompt, before reading it: the answer and the next
/// turn's new tokens (a tool's output, the user's reply). More grow it, which copies the cache
/// and, for a moment, holds it twice. Untouched room costs address space, not memory (see
/// `model::kv_cache`), so it does not depend on `max_tokens`.
pub(crate) const ROOM_AFTER_PROMPT: usize = 2048;

/// What a generation needs besides the sequence.
pub(crate) struct GenerateCtx<'a> {
    pub model: &'a Model,
    pub tokenizer: &'a TextTokenizer,
    pub sink: &'a Sink,
    pub faults: &'a FaultPlan,
    pub cancel: &'a tokio_util::sync::CancellationToken,
    pub chunk: usize,
}

/// Progress of one generation, kept outside the call so an error can still report it.
#[derive(Default)]
pub(crate) struct GenState {
    /// Text streamed so far.
    pub emitted: String,
    pub completion_tokens: usize,
    /// True once the first forward pass started: errors after it touch the cache.
    pub device_work_started: bool,
}

/// The request's parameters, already validated.
pub(crate) struct Plan<'a> {
    pub prompt: &'a [u32],
    pub reused: usize,
    pub max_tokens: usize,
    pub sampling: &'a SamplingParams,
    pub stop: &'a [String],
    /// Holds the model's Hermes calls to the request's tools, when it declares any.
    pub calls: Option<&'a CallGrammar>,
    /// The answer must be text (no call, not blank): the vocabulary to judge tokens by.
    pub answer_only: Option<&'a std::sync::Arc<Vocab>>,
    /// The answer opens with `<tool_call>`, written for the model; with `calls`, the grammar
    /// then holds it to a declared tool.
    pub call_first: bool,
}

impl GenerateCtx<'_> {
    fn cancelled(&self) -> bool {
        self.cancel.is_cancelled() || self.sink.is_closed()
    }

    /// Runs the prefill of `plan.prompt[plan.reused..]` and the decode loop.
    #[instrument(skip_all, fields(prompt = plan.prompt.len(), reused = plan.reused))]
    pub fn run(
        &self,
        seq: &mut Sequence,
        plan: &Plan<'_>,
        state: &mut GenState,
    ) -> Result<FinishReason, EngineError> {
        let mut logits = self.prefill(seq, plan, state)?;
        let mut sampler = Sampler::new(plan.sampling.clone());
        let mut decoder = self.tokenizer.stream_decoder();
        let mut stop = StopMatcher::new(plan.stop);
        let eos = self.tokenizer.eos_ids();
        let mut calls = plan
            .calls
            .map(|grammar| CallConstraint::new(grammar, &self.prompt_tail(plan.prompt)));
        let mut text_only = plan.answer_only.map(|vocab| TextOnly::new(vocab.clone()));
        let mut opening = if plan.call_first {
            self.tokenizer.encode(CALL_OPEN)?.into_iter().collect()
        } else {
            std::collections::VecDeque::new()
        };
        let mut step = 0usize;
        let result = loop {
            let mut values = logits.to_vec1::<f32>()?;
            let token = if let Some(token) = opening.pop_front() {
                // Written for the model: the grammar watches it open the call.
                if let Some(calls) = calls.as_mut() {
                    calls.accept(token, false);
                }
                token
            } else {
                match (text_only.as_mut(), calls.as_mut()) {
                    (Some(text), _) => text_token(&mut sampler, text, &mut values, &seq.tokens)?,
                    (None, Some(calls)) => {
                        next_token(&mut sampler, calls, &mut values, &seq.tokens)?
                    }
                    (None, None) => sampler.sample(&mut values, &seq.tokens)?,
                }
            };
            self.faults.check(Seam::DecodeStep(step))?;
            step += 1;
            if eos.contains(&token) {
                self.emit(state, stop.finish());
                break FinishReason::Stop;
            }
            state.completion_tokens += 1;
            if let Some(text) = decoder.step(token)? {
                let out = stop.push(&text);
                self.emit(state, out.emit);
                if out.stopped {
                    break FinishReason::Stop;
                }
            }
            if calls.as_ref().is_some_and(CallConstraint::bare_call_closed) {
                self.emit(state, stop.finish());
                break FinishReason::Stop;
            }
            if state.completion_tokens >= plan.max_tokens || seq.tokens.len() >= seq.cache.max_len()
            {
                self.emit(state, stop.finish());
                break FinishReason::Length;
            }
            if self.cancelled() {
                return Err(EngineError::Cancelled);
            }
            logits = self.model.forward(&[token], &mut seq.cache)?;
            seq.tokens.push(token);
        };
        tracing::trace!(output = %state.emitted, "generated");
        if let Some(calls) = calls.filter(|c| c.constrained > 0) {
            debug!(
                constrained = calls.constrained,
                overruled = calls.overruled,
                "call grammar"
            );
        }
        Ok(result)
    }

    /// The prompt's last few tokens as bytes, for a prompt that ends inside an opened call.
    fn prompt_tail(&self, prompt: &[u32]) -> Vec<u8> {
        let from = prompt.len().saturating_sub(8);
        self.tokenizer
            .decode(&prompt[from..])
            .map(String::into_bytes)
            .unwrap_or_default()
    }

    fn prefill(
        &self,
        seq: &mut Sequence,
        plan: &Plan<'_>,
        state: &mut GenState,
    ) -> Result<candle_core::Tensor, EngineError> {
        let todo = &plan.prompt[plan.reused..];
        let total = todo.len();
        let chunks = total.div_ceil(self.chunk);
        // Room for the whole prompt and what follows it at once: grown chunk by chunk, the
        // cache would copy itself at every doubling. A prompt past the context is refused
        // here, before any work.
        seq.cache.reserve_with_room(total, ROOM_AFTER_PROMPT)?;
        let mut done = 0usize;
        let mut logits = None;
        for (k, chunk) in todo.chunks(self.chunk).enumerate() {
            if self.cancelled() {
                return Err(EngineError::Cancelled);
            }
            state.device_work_started = true;
            // Only the last chunk's logits are read.
            if k + 1 < chunks {
                self.model.prefill(chunk, &mut seq.cache)?;
            } else {
                logits = Some(self.model.forward(chunk, &mut seq.cache)?);
            }
            seq.tokens.extend_from_slice(chunk);
            done += chunk.len();
            self.faults.check(Seam::PrefillChunk(k))?;
            if chunks > 1 {
                debug!(chunk = k, done, total, "prefill chunk");
                self.sink.send(EngineEvent::Progress(Progress::Prefill {
                    done: done as u32,
                    total: total as u32,
                }));
            }
        }
        logits.ok_or_else(|| EngineError::InvalidRequest("nothing to prefill".into()))
    }

    fn emit(&self, state: &mut GenState, text: String) {
        if !text.is_empty() {
            state.emitted.push_str(&text);
            self.sink.send(EngineEvent::Text(text));
        }
    }
}

/// Samples an answer that must be text. Should nothing fit (a vocabulary without a single
/// non-blank token), the answer is left free.
fn text_token(
    sampler: &mut Sampler,
    text: &mut TextOnly,
    values: &mut [f32],
    history: &[u32],
) -> Result<u32, EngineError> {
    let token = match sampler.sample_constrained(values, history, &|id| text.allows(id))? {
        Some(token) => token,
        None => {
            tracing::warn!("no token fits a text answer; the answer is left free");
            sampler
                .sample_constrained(values, &[], &|_| true)?
                .unwrap_or_else(|| crate::sampler::argmax(values))
        }
    };
    text.accept(token);
    Ok(token)
}

/// Samples under the call grammar while a call is open. Should the grammar allow nothing (a
/// vocabulary without the bytes it needs), it steps aside and the parser's repairs take over.
fn next_token(
    sampler: &mut Sampler,
    calls: &mut CallConstraint<'_>,
    values: &mut [f32],
    history: &[u32],
) -> Result<u32, EngineError> {
    if !calls.is_active() {
        let token = sampler.sample(values, history)?;
        calls.accept(token, false);
        return Ok(token);
    }
    let overruled = !calls.allows(crate::sampler::argmax(values));
    if overruled && calls.is_tentative() {
        // The model names no declared tool on a line that looked like a call: a JSON record,
        // not a call, so it is left as the model writes it.
        calls.abandon();
        let token = sampler.sample(values, history)?;
        calls.accept(token, false);
        return Ok(token);
    }
    let token = match sampler.sample_constrained(values, history, &|id| calls.allows(id))? {
        Some(token) => token,
        None => {
            tracing::warn!("no token fits the call grammar; the call is left unconstrained");
            calls.abandon();
            // `values` already carry the repeat penalty: draw again with everything allowed and
            // no history, so it is not applied twice.
            sampler
                .sample_constrained(values, &[], &|_| true)?
                .unwrap_or_else(|| crate::sampler::argmax(values))
        }
    };
    calls.accept(token, overruled);
    Ok(token)
}

#[cfg(test)]
#[path = "generate_tests.rs"]
mod tests;

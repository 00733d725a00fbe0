//! Turns the NDJSON lines of Ollama's native `/api/chat` stream into [`BackendEvent`]s, in the
//! same order as the SSE path: text and reasoning as they come, then the tool calls, usage and
//! `Finished` once the `done: true` line arrives. The answer is held to its [`Budget`], as on
//! the SSE path.

use std::sync::Arc;

use hearth_backend::{BackendError, BackendEvent, FinishReason, NativeToolCall, Usage};
use serde_json::Value;

use crate::config::OpenAiEndpoint;
use crate::decode::{Decode, Decoded};
use crate::errors;
use crate::limits::{Breach, Budget};
use crate::ollama_wire::{LineMessage, LineToolCall, OllamaLine};
use crate::redact::redact;

/// Decoding state of one streamed `/api/chat` answer.
pub(crate) struct Decoder {
    endpoint: Arc<OpenAiEndpoint>,
    model: String,
    /// Tool calls arrive whole (arguments as a JSON object); held back until `done` so that
    /// they come after all text, as on the SSE path.
    calls: Vec<NativeToolCall>,
    output_started: bool,
    budget: Budget,
}

impl Decoder {
    /// A decoder for an answer asked for with `max_tokens` (which sizes its [`Budget`]).
    pub(crate) fn new(endpoint: Arc<OpenAiEndpoint>, model: &str, max_tokens: Option<u32>) -> Self {
        Self {
            budget: Budget::for_answer(max_tokens),
            endpoint,
            model: model.to_string(),
            calls: Vec::new(),
            output_started: false,
        }
    }

    fn message(
        &mut self,
        message: LineMessage,
        events: &mut Vec<BackendEvent>,
    ) -> Result<(), Breach> {
        let before = events.len();
        if let Some(text) = message.thinking.filter(|t| !t.is_empty()) {
            self.budget.spend(text.len())?;
            events.push(BackendEvent::Reasoning { text });
        }
        if let Some(text) = message.content.filter(|t| !t.is_empty()) {
            self.budget.spend(text.len())?;
            events.push(BackendEvent::Text { text });
        }
        let calls = message.tool_calls.unwrap_or_default();
        self.output_started |= !calls.is_empty() || events.len() > before;
        for call in calls {
            let call = self.call(call);
            Budget::check_calls(self.calls.len() + 1)?;
            Budget::check_arguments(call.arguments.len())?;
            self.budget.spend(call.arguments.len())?;
            self.calls.push(call);
        }
        Ok(())
    }

    fn call(&self, call: LineToolCall) -> NativeToolCall {
        let name = call.function.name.unwrap_or_default();
        if name.is_empty() {
            tracing::warn!(endpoint = %self.endpoint.name, "tool call without a name");
        }
        // hearth's tool calls carry their arguments as the JSON text the model wrote.
        let arguments = match call.function.arguments {
            Some(Value::String(text)) => text,
            Some(value) => value.to_string(),
            None => "{}".to_string(),
        };
        let id = match call.id.filter(|id| !id.is_empty()) {
            Some(id) => id,
            None => format!("call_{}", self.calls.len()),
        };
        NativeToolCall {
            id,
            name,
            arguments,
        }
    }

    /// The `done` line: held tool calls, usage, then `Finished`.
    fn close(&mut self, line: &OllamaLine, events: &mut Vec<BackendEvent>) {
        let called_tools = !self.calls.is_empty();
        events.extend(
            self.calls
                .drain(..)
                .map(|call| BackendEvent::ToolCall { call }),
        );
        if line.prompt_eval_count.is_some() || line.eval_count.is_some() {
            events.push(BackendEvent::Usage {
                usage: Usage {
                    prompt_tokens: line.prompt_eval_count.unwrap_or(0),
                    completion_tokens: line.eval_count.unwrap_or(0),
                    cached_tokens: None,
                },
            });
        }
        // Ollama says `stop` when the model ended its turn to call tools.
        let reason = match line.done_reason.as_deref() {
            None | Some("" | "stop") if called_tools => FinishReason::ToolCalls,
            None | Some("") => FinishReason::Stop,
            Some(other) => FinishReason::from_openai(other),
        };
        events.push(BackendEvent::Finished { reason });
    }
}

impl Decode for Decoder {
    /// Whether any text, reasoning or tool call arrived (the `done` line counts too).
    fn output_started(&self) -> bool {
        self.output_started
    }

    fn progress(&self) -> usize {
        self.budget.spent()
    }

    /// Decodes one NDJSON line; `done: true` completes the answer.
    fn feed(&mut self, payload: &str) -> Result<Decoded, BackendError> {
        let mut line: OllamaLine = match serde_json::from_str(payload) {
            Ok(line) => line,
            Err(err) => {
                // serde quotes values it refuses, and a server may echo a secret into one.
                let err = redact(&self.endpoint, &err.to_string());
                tracing::warn!(endpoint = %self.endpoint.name, %err, "skipping undecodable NDJSON line");
                return Ok(Decoded::More(Vec::new()));
            }
        };
        if let Some(error) = &line.error {
            return Err(errors::in_stream(&self.endpoint, &self.model, error));
        }
        let mut events = Vec::new();
        if let Some(message) = line.message.take() {
            self.message(message, &mut events)
                .map_err(|breach| breach.error(&self.endpoint))?;
        }
        if !line.done {
            return Ok(Decoded::More(events));
        }
        self.output_started = true;
        self.close(&line, &mut events);
        Ok(Decoded::Done(events))
    }

    /// Ollama's last line always says `done: true`; a body that ends before it was cut off.
    fn end_of_stream(&mut self) -> Result<Vec<BackendEvent>, BackendError> {
        Err(BackendError::StreamClosed {
            endpoint: self.endpoint.name.clone(),
        })
    }
}

#[cfg(test)]
#[path = "ollama_decode_tests.rs"]
mod tests;

//! Turns the `data:` payloads of an SSE stream into [`BackendEvent`]s: deltas out as they come,
//! native tool calls assembled per `index`, usage and the finish held back so that
//! [`BackendEvent::Finished`] is always the last event. The answer is held to its
//! [`Budget`]: text, reasoning and tool-call arguments together, the number of calls, and
//! each call's arguments.

use std::collections::BTreeMap;
use std::sync::Arc;

use hearth_backend::{BackendError, BackendEvent, FinishReason, NativeToolCall, Usage};

use crate::config::OpenAiEndpoint;
use crate::decode::{Decode, Decoded};
use crate::errors;
use crate::limits::{Breach, Budget};
use crate::redact::redact;
use crate::wire::{Chunk, Delta, ToolCallDelta, WireUsage};

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Decoding state of one streamed completion.
pub(crate) struct Decoder {
    endpoint: Arc<OpenAiEndpoint>,
    model: String,
    calls: BTreeMap<u32, PartialCall>,
    usage: Option<Usage>,
    finish: Option<FinishReason>,
    /// Whether any tool call was emitted, for a `[DONE]` that came without a finish reason.
    called_tools: bool,
    /// Whether the model produced anything yet (a delta, a tool-call fragment, a finish).
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
            calls: BTreeMap::new(),
            usage: None,
            finish: None,
            called_tools: false,
            output_started: false,
        }
    }

    fn delta(&mut self, delta: Delta, events: &mut Vec<BackendEvent>) -> Result<(), Breach> {
        let before = events.len();
        let reasoning = delta.reasoning_content.or(delta.reasoning);
        if let Some(text) = reasoning.filter(|t| !t.is_empty()) {
            self.budget.spend(text.len())?;
            events.push(BackendEvent::Reasoning { text });
        }
        if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
            self.budget.spend(text.len())?;
            events.push(BackendEvent::Text { text });
        }
        let fragments = !delta.tool_calls.is_empty();
        for (position, call) in delta.tool_calls.into_iter().enumerate() {
            self.assemble(position, call)?;
        }
        self.output_started |= fragments || events.len() > before;
        Ok(())
    }

    fn assemble(&mut self, position: usize, delta: ToolCallDelta) -> Result<(), Breach> {
        // A server that leaves out `index` sends whole calls, in order.
        let index = delta
            .index
            .unwrap_or_else(|| u32::try_from(position).unwrap_or(u32::MAX));
        if !self.calls.contains_key(&index) {
            Budget::check_calls(self.calls.len() + 1)?;
        }
        let call = self.calls.entry(index).or_default();
        // Some servers repeat id and name on every fragment; the first one wins.
        if let Some(id) = delta.id.filter(|s| !s.is_empty() && call.id.is_empty()) {
            call.id = id;
        }
        if let Some(name) = delta
            .function
            .name
            .filter(|s| !s.is_empty() && call.name.is_empty())
        {
            call.name = name;
        }
        if let Some(fragment) = delta.function.arguments {
            Budget::check_arguments(call.arguments.len() + fragment.len())?;
            self.budget.spend(fragment.len())?;
            call.arguments.push_str(&fragment);
        }
        Ok(())
    }

    fn flush_calls(&mut self, events: &mut Vec<BackendEvent>) {
        for (index, call) in std::mem::take(&mut self.calls) {
            if call.name.is_empty() {
                tracing::warn!(endpoint = %self.endpoint.name, index, "tool call without a name");
            }
            let id = if call.id.is_empty() {
                format!("call_{index}")
            } else {
                call.id
            };
            self.called_tools = true;
            events.push(BackendEvent::ToolCall {
                call: NativeToolCall {
                    id,
                    name: call.name,
                    arguments: call.arguments,
                },
            });
        }
    }

    /// Pending tool calls, usage, then `Finished`.
    fn close(&mut self) -> Vec<BackendEvent> {
        let mut events = Vec::new();
        self.flush_calls(&mut events);
        if let Some(usage) = self.usage.take() {
            events.push(BackendEvent::Usage { usage });
        }
        let reason = self.finish.take().unwrap_or(if self.called_tools {
            FinishReason::ToolCalls
        } else {
            FinishReason::Stop
        });
        events.push(BackendEvent::Finished { reason });
        events
    }
}

impl Decode for Decoder {
    /// Whether the model has produced anything yet. Tool-call fragments count although their
    /// events come later: the first-token wait is over once the model writes.
    fn output_started(&self) -> bool {
        self.output_started
    }

    fn progress(&self) -> usize {
        self.budget.spent()
    }

    /// Decodes one SSE `data` payload; `[DONE]` completes the answer.
    fn feed(&mut self, data: &str) -> Result<Decoded, BackendError> {
        if data.trim() == "[DONE]" {
            return Ok(Decoded::Done(self.close()));
        }
        let chunk: Chunk = match serde_json::from_str(data) {
            Ok(chunk) => chunk,
            Err(err) => {
                // serde quotes values it refuses, and a server may echo a secret into one.
                let err = redact(&self.endpoint, &err.to_string());
                tracing::warn!(endpoint = %self.endpoint.name, %err, "skipping undecodable SSE chunk");
                return Ok(Decoded::More(Vec::new()));
            }
        };
        if let Some(error) = &chunk.error {
            return Err(errors::in_stream(&self.endpoint, &self.model, error));
        }
        let mut events = Vec::new();
        // Only the first choice is followed: hearth never asks for `n > 1`.
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            self.delta(choice.delta, &mut events)
                .map_err(|breach| breach.error(&self.endpoint))?;
            // Some proxies send `""` instead of `null` on every chunk before the last.
            let reason = choice.finish_reason.filter(|r| !r.is_empty());
            if let (Some(reason), None) = (reason, &self.finish) {
                self.output_started = true;
                self.finish = Some(FinishReason::from_openai(&reason));
                // Servers send every fragment of every call before the finish reason.
                self.flush_calls(&mut events);
            }
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage_of(usage));
        }
        Ok(Decoded::More(events))
    }

    /// The stream ended (EOF or a broken connection) without `[DONE]`: a proper end if the
    /// finish reason already came, else [`BackendError::StreamClosed`].
    fn end_of_stream(&mut self) -> Result<Vec<BackendEvent>, BackendError> {
        if self.finish.is_some() {
            Ok(self.close())
        } else {
            Err(BackendError::StreamClosed {
                endpoint: self.endpoint.name.clone(),
            })
        }
    }
}

fn usage_of(usage: WireUsage) -> Usage {
    Usage {
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        cached_tokens: usage.prompt_tokens_details.and_then(|d| d.cached_tokens),
    }
}

#[cfg(test)]
#[path = "sse_tests.rs"]
mod tests;

//! One model round: stream the answer to the client and collect what it asked for.

use futures::StreamExt;
use hearth_backend::{BackendError, BackendEvent, FinishReason, Progress, Usage};

use super::client_ops::ClientOps;
use super::dispatch::parse_arguments;
use super::event::AgentEvent;
use super::history::{HistoryEntry, ToolCallRecord};
use super::ids::ToolCallId;
use tokio_util::sync::CancellationToken;

/// What one model round produced.
#[derive(Debug, Default)]
pub struct Round {
    pub text: String,
    pub reasoning: String,
    pub finish: Option<FinishReason>,
    pub usage: Option<Usage>,
    pub cancelled: bool,
    pub calls: Vec<ToolCallRecord>,
    /// Calls that could not be parsed, with what was wrong.
    pub malformed: Vec<(ToolCallRecord, String)>,
}

impl Round {
    /// Appends the assistant's message (text, reasoning and every call, malformed ones too, so
    /// each result that follows answers a call).
    pub fn record(&self, history: &mut Vec<HistoryEntry>) {
        let calls: Vec<ToolCallRecord> = self
            .calls
            .iter()
            .chain(self.malformed.iter().map(|(c, _)| c))
            .cloned()
            .collect();
        if self.text.is_empty() && self.reasoning.is_empty() && calls.is_empty() {
            return;
        }
        history.push(HistoryEntry::Assistant {
            text: self.text.clone(),
            reasoning: (!self.reasoning.is_empty()).then(|| self.reasoning.clone()),
            tool_calls: calls,
        });
    }
}

/// Streams one round to the client. Returns what arrived, plus the error that ended it early.
pub async fn stream_round(
    client: &dyn ClientOps,
    cancel: &CancellationToken,
    mut stream: hearth_backend::EventStream,
) -> (Round, Option<BackendError>) {
    let mut round = Round::default();
    loop {
        let next = tokio::select! {
            biased;
            () = cancel.cancelled() => {
                round.cancelled = true;
                // Dropping the stream closes the upstream request.
                return (round, None);
            }
            next = stream.next() => next,
        };
        match next {
            None => return (round, None),
            Some(Err(err)) => {
                if cancel.is_cancelled() {
                    round.cancelled = true;
                    return (round, None);
                }
                return (round, Some(err));
            }
            Some(Ok(event)) => apply_event(client, &mut round, event),
        }
    }
}

fn apply_event(client: &dyn ClientOps, round: &mut Round, event: BackendEvent) {
    match event {
        BackendEvent::Text { text } => {
            round.text.push_str(&text);
            client.send(AgentEvent::AgentText { text });
        }
        BackendEvent::Reasoning { text } => {
            round.reasoning.push_str(&text);
            client.send(AgentEvent::AgentThought { text });
        }
        BackendEvent::ToolCall { call } => {
            // hearth's own ids: unique in the session whatever the server generated.
            let id = ToolCallId::generate();
            match parse_arguments(&call.arguments) {
                Ok(arguments) => round.calls.push(ToolCallRecord {
                    id,
                    name: call.name,
                    arguments,
                }),
                Err(problem) => {
                    let arguments = serde_json::Value::String(call.arguments);
                    round.malformed.push((
                        ToolCallRecord {
                            id,
                            name: call.name,
                            arguments,
                        },
                        problem,
                    ));
                }
            }
        }
        BackendEvent::Usage { usage } => round.usage = Some(usage),
        BackendEvent::Progress { progress } => client.send(AgentEvent::Notice {
            text: describe(&progress),
        }),
        BackendEvent::Finished { reason } => round.finish = Some(reason),
    }
}

fn describe(progress: &Progress) -> String {
    match progress {
        Progress::LoadingModel {
            model,
            fraction: Some(f),
        } => format!("Loading {model}: {:.0}%", f * 100.0),
        Progress::LoadingModel {
            model,
            fraction: None,
        } => format!("Loading {model}…"),
        Progress::Prefill { done, total } => format!("Reading the prompt: {done}/{total} tokens"),
        Progress::ColdPrefill { reason } => {
            format!("Reading the whole conversation again ({reason})")
        }
    }
}

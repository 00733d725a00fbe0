//! What one task's turn produced, gathered from the events a front end sees and from the
//! session's history: the answer, the calls and how they ended, rounds, tokens and time.

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;
use hearth_conversation::{AgentEvent, HistoryEntry, PermissionAnswer, Reach, ToolCard};
use serde::Serialize;

use crate::host::LocalFrontEnd;
use crate::sync::lock;

/// One tool call of the turn.
#[derive(Debug, Clone, Serialize)]
pub struct CallOutcome {
    pub name: String,
    pub succeeded: bool,
}

/// A finished task's turn.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Outcome {
    /// Every answer text of the turn, in order.
    pub answer: String,
    /// The last round's text: what the user reads when the turn ends.
    #[serde(skip)]
    pub final_answer: String,
    pub calls: Vec<CallOutcome>,
    /// Model requests the turn made.
    pub rounds: u32,
    /// Prompt plus completion tokens over the turn's requests.
    pub tokens: u64,
    pub seconds: f64,
    /// How the turn ended (`end_turn`, `max_turn_requests`, …) when it did not fail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The project's files as the task set them up (for `file_unchanged`).
    #[serde(skip)]
    pub setup: BTreeMap<String, String>,
    /// The session's history at the end of the turn (written beside a kept project).
    #[serde(skip)]
    pub history: Vec<HistoryEntry>,
}

impl Outcome {
    /// Fills the calls and the final answer from the turn's history.
    pub fn read_history(&mut self, history: Vec<HistoryEntry>) {
        let mut pending: Vec<(String, String)> = Vec::new();
        for entry in &history {
            match entry {
                HistoryEntry::Assistant {
                    text, tool_calls, ..
                } => {
                    self.final_answer.clone_from(text);
                    for call in tool_calls {
                        pending.push((call.id.to_string(), call.name.clone()));
                    }
                }
                HistoryEntry::ToolResult {
                    call_id, is_error, ..
                } => {
                    if let Some(at) = pending.iter().position(|(id, _)| id == call_id.as_str()) {
                        let (_, name) = pending.remove(at);
                        self.calls.push(CallOutcome {
                            name,
                            succeeded: !is_error,
                        });
                    }
                }
                HistoryEntry::User { .. } => {}
            }
        }
        // Calls that never got a result (the turn ended first) did not succeed.
        self.calls
            .extend(pending.into_iter().map(|(_, name)| CallOutcome {
                name,
                succeeded: false,
            }));
        self.history = history;
    }
}

/// The front end of an eval task: nobody to ask, so everything is allowed (the project is a
/// throwaway directory), and the answer and usage are recorded.
#[derive(Default)]
pub struct EvalFront {
    seen: Mutex<Seen>,
}

#[derive(Default)]
struct Seen {
    answer: String,
    rounds: u32,
    tokens: u64,
}

impl EvalFront {
    /// Moves what the events showed into `outcome`.
    pub fn fill(&self, outcome: &mut Outcome) {
        let seen = std::mem::take(&mut *lock(&self.seen));
        outcome.answer = seen.answer;
        outcome.rounds = seen.rounds;
        outcome.tokens = seen.tokens;
    }
}

#[async_trait]
impl LocalFrontEnd for EvalFront {
    async fn request_permission(&self, _card: &ToolCard, _reach: Reach) -> PermissionAnswer {
        PermissionAnswer::AllowOnce
    }

    fn send(&self, event: AgentEvent) {
        let mut seen = lock(&self.seen);
        match event {
            AgentEvent::AgentText { text } => seen.answer.push_str(&text),
            // One usage report per model request.
            AgentEvent::Usage { used, .. } => {
                seen.rounds += 1;
                seen.tokens += used;
            }
            _ => {}
        }
    }
}

//! What the agent tells a front end. ACP renders these as `session/update`s; the REPL and
//! batch front ends print them. Replay of a stored session emits the same events.

use std::path::PathBuf;

use hearth_backend::ContentPart;
use serde::{Deserialize, Serialize};

use crate::ids::{TerminalId, ToolCallId};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    /// The user's prompt (sent during replay; live prompts are already on the client's screen).
    UserMessage { content: Vec<ContentPart> },
    /// A piece of the visible answer.
    AgentText { text: String },
    /// A piece of reasoning, for the thought view.
    AgentThought { text: String },
    /// A tool card appears.
    ToolCallStarted { card: ToolCard },
    /// A tool card changes; unset fields stay as they were.
    ToolCallUpdated {
        id: ToolCallId,
        update: ToolCardUpdate,
    },
    /// The plan, replacing any earlier one.
    Plan { entries: Vec<PlanEntry> },
    /// How full the context window is.
    Usage { used: u64, size: u64 },
    /// The session's title became known or changed.
    SessionTitle { title: String },
    /// Something the user should know that is not part of the answer (a backend is loading a
    /// model, compaction ran, a retry happened).
    Notice { text: String },
}

/// The icon and meaning of a tool card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    Read,
    Edit,
    Delete,
    Move,
    Search,
    Execute,
    Think,
    Fetch,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Pending,
    InProgress,
    Completed,
    Failed,
}

/// A file a tool touches, so the editor can follow along.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolLocation {
    pub path: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// What a tool card shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolContent {
    Text {
        text: String,
    },
    /// A file change; `old_text` is `None` for a new file.
    Diff {
        path: PathBuf,
        old_text: Option<String>,
        new_text: String,
    },
    /// A live terminal created through the host's `ClientOps::create_terminal`.
    Terminal {
        terminal_id: TerminalId,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCard {
    pub id: ToolCallId,
    pub title: String,
    pub kind: ToolKind,
    pub status: ToolStatus,
    #[serde(default)]
    pub locations: Vec<ToolLocation>,
    #[serde(default)]
    pub content: Vec<ToolContent>,
    #[serde(default)]
    pub raw_input: serde_json::Value,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolCardUpdate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ToolStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Replaces the card's content when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ToolContent>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locations: Option<Vec<ToolLocation>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanEntry {
    pub content: String,
    pub status: PlanStatus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    Pending,
    InProgress,
    Completed,
}

impl AgentEvent {
    /// The event with terminal content shown as text: for clients without terminals, and for
    /// replay, where the terminal is long gone. A finished command's card gets its output (from
    /// `raw_output.output`); a running one says so.
    pub fn with_terminals_as_text(self) -> AgentEvent {
        let replace = |content: Vec<ToolContent>, output: Option<&str>| -> Vec<ToolContent> {
            content
                .into_iter()
                .map(|c| match c {
                    ToolContent::Terminal { .. } => ToolContent::Text {
                        text: output
                            .map_or_else(|| "Running…".to_string(), |o| format!("```\n{o}\n```")),
                    },
                    other => other,
                })
                .collect()
        };
        match self {
            AgentEvent::ToolCallStarted { mut card } => {
                card.content = replace(card.content, None);
                AgentEvent::ToolCallStarted { card }
            }
            AgentEvent::ToolCallUpdated { id, mut update } => {
                let output = update
                    .raw_output
                    .as_ref()
                    .and_then(|r| r.get("output"))
                    .and_then(|o| o.as_str())
                    .map(str::to_string);
                update.content = update.content.map(|c| replace(c, output.as_deref()));
                AgentEvent::ToolCallUpdated { id, update }
            }
            other => other,
        }
    }
}

//! The conversation as hearth keeps it: what the user said, what the model answered, which
//! tools it called and what they returned. Renderers in `parse/` turn it into backend messages;
//! the store persists it; compaction projects it. Nothing here knows ACP or HTTP.

use hearth_backend::ContentPart;
use serde::{Deserialize, Serialize};

use crate::ids::ToolCallId;

/// One entry of the conversation, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HistoryEntry {
    /// A user message (text and images).
    User { content: Vec<ContentPart> },
    /// One assistant message: its visible text, its reasoning, and the calls it made.
    Assistant {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCallRecord>,
    },
    /// The result of one tool call, answering a call of the assistant entry before it.
    ToolResult {
        call_id: ToolCallId,
        name: String,
        output: String,
        #[serde(default)]
        is_error: bool,
    },
}

/// A tool call as the model made it (after parsing and repair).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    pub id: ToolCallId,
    pub name: String,
    pub arguments: serde_json::Value,
}

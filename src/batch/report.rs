//! What one prompt produced, as `--output json` prints it and as the text printer sums it up.

use serde::Serialize;

use hearth_conversation::{ToolKind, ToolStatus};

/// One prompt's result object.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PromptReport {
    pub id: String,
    /// The answer text.
    pub text: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reasoning: String,
    pub tool_calls: Vec<ToolCallReport>,
    /// Calls refused because headless mode cannot ask.
    pub denied: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageReport>,
    /// `end_turn`, `max_tokens`, `max_turn_requests`, `refusal`, `cancelled`; absent on error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The session the prompt ran in (resumable with `--resume`).
    pub session_id: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ToolCallReport {
    pub id: String,
    pub title: String,
    pub kind: ToolKind,
    pub status: ToolStatus,
    pub input: serde_json::Value,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct UsageReport {
    pub used: u64,
    pub size: u64,
}

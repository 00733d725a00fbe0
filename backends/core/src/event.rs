use serde::{Deserialize, Serialize};

/// Something the model produced, in stream order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BackendEvent {
    /// Visible answer text. May still contain in-band `<think>` or `<tool_call>` markup; the
    /// agent's parsers sort that out.
    Text { text: String },
    /// Reasoning delivered out of band (`reasoning_content` / `reasoning`).
    Reasoning { text: String },
    /// A native tool call, complete: its argument fragments have been assembled.
    ToolCall { call: NativeToolCall },
    /// Token counts as the backend reported them.
    Usage { usage: Usage },
    /// What the backend is busy with before the first token (loading weights, long prefill).
    Progress { progress: Progress },
    /// The last event of a successful stream.
    Finished { reason: FinishReason },
}

/// A tool call made through the OpenAI `tool_calls` field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NativeToolCall {
    pub id: String,
    pub name: String,
    /// The arguments exactly as the model wrote them (JSON text, possibly malformed).
    pub arguments: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    /// Prompt tokens served from a prefix cache, when reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u32>,
}

/// Why generation stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// End of turn or a stop string.
    Stop,
    /// The token limit cut the answer.
    Length,
    /// The model ended its turn to call tools natively.
    ToolCalls,
    /// The server filtered the answer.
    ContentFilter,
    /// A reason this version does not know, as the server spelled it.
    Other(String),
}

impl FinishReason {
    /// Maps an OpenAI `finish_reason` value.
    pub fn from_openai(value: &str) -> Self {
        match value {
            "stop" | "eos" | "end_turn" => Self::Stop,
            "length" | "max_tokens" => Self::Length,
            "tool_calls" | "function_call" => Self::ToolCalls,
            "content_filter" => Self::ContentFilter,
            other => Self::Other(other.to_string()),
        }
    }
}

/// Work a backend reports before tokens flow, so the editor can say what is happening.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Progress {
    /// Weights are being fetched or loaded; `fraction` is in 0..=1 when known.
    LoadingModel {
        model: String,
        fraction: Option<f32>,
    },
    /// Prompt tokens processed so far, out of `total`.
    Prefill { done: u32, total: u32 },
    /// The prefix cache could not be reused; the prompt is read from scratch.
    ColdPrefill { reason: String },
    /// The request waits for the backend (the local engine serves one request at a time);
    /// `ahead` requests are in front of it, the one being served included.
    Queued { ahead: u32 },
}

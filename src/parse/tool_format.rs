use serde::{Deserialize, Serialize};

/// How tool calls travel between hearth and a model, chosen per endpoint (`tool_format`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolFormat {
    /// Pick by model name; parse both in-band formats when unsure.
    #[default]
    Auto,
    /// Qwen2.5 / Qwen3 Hermes JSON: `<tool_call>{"name":…,"arguments":…}</tool_call>`.
    Hermes,
    /// Qwen3-Coder XML: `<tool_call><function=NAME><parameter=K>…`.
    Xml,
    /// OpenAI `tools` in the request, `tool_calls` deltas in the answer.
    Native,
}

//! The OpenAI chat-completions wire format: request bodies out, stream chunks and model lists in.
//! Incoming types are lenient (every field optional) because servers differ in what they send.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The body of `POST /chat/completions`.
#[derive(Debug, Serialize)]
pub(crate) struct ChatRequest<'a> {
    pub model: &'a str,
    pub messages: Vec<WireMessage<'a>>,
    pub stream: bool,
    pub stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<WireTool<'a>>,
    /// `"none"` when the model must answer in text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub stop: &'a [String],
}

#[derive(Debug, Serialize)]
pub(crate) struct StreamOptions {
    pub include_usage: bool,
}

#[derive(Debug, Serialize)]
pub(crate) struct WireMessage<'a> {
    pub role: &'static str,
    /// `None` is sent as `null`: an assistant turn that only called tools.
    pub content: Option<WireContent<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<WireToolCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<&'a str>,
}

/// Message content: a plain string when it is text only, parts when it carries images.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum WireContent<'a> {
    Text(String),
    Parts(Vec<WirePart<'a>>),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum WirePart<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Debug, Serialize)]
pub(crate) struct ImageUrl {
    pub url: String,
}

#[derive(Debug, Serialize)]
pub(crate) struct WireToolCall<'a> {
    pub id: &'a str,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: WireFunctionCall<'a>,
}

#[derive(Debug, Serialize)]
pub(crate) struct WireFunctionCall<'a> {
    pub name: &'a str,
    pub arguments: &'a str,
}

#[derive(Debug, Serialize)]
pub(crate) struct WireTool<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: WireFunction<'a>,
}

#[derive(Debug, Serialize)]
pub(crate) struct WireFunction<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub parameters: &'a Value,
}

/// One `chat.completion.chunk`, or an error object some servers send mid-stream, or a whole
/// `chat.completion` from a server that ignored `stream: true`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Chunk {
    #[serde(default, deserialize_with = "null_as_default")]
    pub choices: Vec<Choice>,
    pub usage: Option<WireUsage>,
    pub error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Choice {
    #[serde(default, deserialize_with = "null_as_default")]
    pub index: u32,
    /// `message` in a non-streamed `chat.completion`, which is decoded as one big chunk.
    #[serde(default, deserialize_with = "null_as_default", alias = "message")]
    pub delta: Delta,
    pub finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Delta {
    pub content: Option<String>,
    /// vLLM, SGLang, llama.cpp, LM Studio.
    pub reasoning_content: Option<String>,
    /// OpenRouter, Ollama, newer vLLM.
    pub reasoning: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub tool_calls: Vec<ToolCallDelta>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct ToolCallDelta {
    pub index: Option<u32>,
    pub id: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub function: FunctionDelta,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct FunctionDelta {
    pub name: Option<String>,
    pub arguments: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default, deserialize_with = "null_as_default")]
    pub prompt_tokens: u32,
    #[serde(default, deserialize_with = "null_as_default")]
    pub completion_tokens: u32,
    pub prompt_tokens_details: Option<PromptTokensDetails>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct PromptTokensDetails {
    pub cached_tokens: Option<u32>,
}

/// Servers send `null` where OpenAI omits a field; both mean "the default".
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

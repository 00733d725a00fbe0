//! Ollama's native chat wire format (`POST /api/chat`): the request body out, NDJSON lines in.
//! Incoming types are lenient (every field optional) like the OpenAI ones in [`crate::wire`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::wire::WireTool;

/// The body of `POST /api/chat`.
#[derive(Debug, Serialize)]
pub(crate) struct OllamaChat<'a> {
    pub model: &'a str,
    pub messages: Vec<OllamaMessage<'a>>,
    pub stream: bool,
    pub options: OllamaOptions<'a>,
    /// Same shape as OpenAI's `tools`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<WireTool<'a>>,
}

/// Per-request runtime options; `num_ctx` is why this path exists.
#[derive(Debug, Serialize)]
pub(crate) struct OllamaOptions<'a> {
    pub num_ctx: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_predict: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub stop: &'a [String],
}

#[derive(Debug, Serialize)]
pub(crate) struct OllamaMessage<'a> {
    pub role: &'static str,
    pub content: String,
    /// Base64 image bytes, without a data-URI prefix.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<OllamaToolCall<'a>>,
    /// The name of the tool a `tool` message answers, when it is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<&'a str>,
}

#[derive(Debug, Serialize)]
pub(crate) struct OllamaToolCall<'a> {
    pub function: OllamaFunctionCall<'a>,
}

#[derive(Debug, Serialize)]
pub(crate) struct OllamaFunctionCall<'a> {
    pub name: &'a str,
    /// A JSON object, not a string as in OpenAI's format.
    pub arguments: Value,
}

/// One NDJSON line of a streamed answer, or an `{"error": "..."}` line.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct OllamaLine {
    pub message: Option<LineMessage>,
    #[serde(default)]
    pub done: bool,
    pub done_reason: Option<String>,
    pub prompt_eval_count: Option<u32>,
    pub eval_count: Option<u32>,
    pub error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct LineMessage {
    pub content: Option<String>,
    pub thinking: Option<String>,
    pub tool_calls: Option<Vec<LineToolCall>>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct LineToolCall {
    /// Newer Ollama versions send an id; older ones none.
    pub id: Option<String>,
    #[serde(default)]
    pub function: LineFunction,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct LineFunction {
    pub name: Option<String>,
    /// A JSON object (a string from some proxies; passed through as written).
    pub arguments: Option<Value>,
}

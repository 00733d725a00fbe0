use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    /// The result of a native (OpenAI `tools`) call; see [`Message::tool_call_id`].
    Tool,
}

/// One part of a message's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    Text {
        text: String,
    },
    /// Base64 image bytes; sent to OpenAI-compatible servers as a data URI.
    Image {
        mime_type: String,
        data: String,
    },
}

impl ContentPart {
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }
}

/// One message of the conversation as the model will see it.
///
/// Backends that render prompts in-band (Hermes or XML tool formats) receive messages whose
/// tool calls and results are already rendered into text; `tool_calls` and `tool_call_id` are
/// used only for native tool calling.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<ContentPart>,
    /// Reasoning the assistant produced, for servers that accept it back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Calls an assistant message made (native tool calling).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<crate::NativeToolCall>,
    /// Which call a [`Role::Tool`] message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Self {
            role,
            content: vec![ContentPart::text(text)],
            reasoning: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    pub fn system(text: impl Into<String>) -> Self {
        Self::text(Role::System, text)
    }

    pub fn user(text: impl Into<String>) -> Self {
        Self::text(Role::User, text)
    }

    pub fn assistant(text: impl Into<String>) -> Self {
        Self::text(Role::Assistant, text)
    }

    /// All text parts joined, images left out.
    pub fn plain_text(&self) -> String {
        let mut out = String::new();
        for part in &self.content {
            if let ContentPart::Text { text } = part {
                out.push_str(text);
            }
        }
        out
    }

    pub fn has_images(&self) -> bool {
        self.content
            .iter()
            .any(|p| matches!(p, ContentPart::Image { .. }))
    }
}

/// A tool the model may call, with its JSON Schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// One completion request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionRequest {
    /// The model id as the backend knows it (no `endpoint:` prefix).
    pub model: String,
    pub messages: Vec<Message>,
    /// Tools sent natively (OpenAI `tools`). Empty when the prompt carries the tool block.
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    #[serde(default)]
    pub stop: Vec<String>,
    /// The context window the prompt was budgeted for. A backend whose server takes the window
    /// per request sends it (Ollama's `num_ctx`, through its native chat); others ignore it.
    #[serde(default)]
    pub context_window: Option<u32>,
    /// The tools the prompt's Hermes block declares, for a backend that samples tokens itself:
    /// it may hold each `<tool_call>` the model opens to one of them with schema-valid
    /// arguments (the local engine does). Servers never see it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hermes_tools: Vec<ToolSpec>,
    /// With `hermes_tools`: also hold a call the model writes without the tags (a line that
    /// opens `{"name"`), and end the answer when it closes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hold_bare_calls: bool,
    /// The model must answer in text this time: no tool call, no empty answer. An OpenAI
    /// server is sent `tool_choice: "none"` (when there are native tools); the local engine
    /// holds its sampling to it. The caller adds the in-band format's call tag as a stop
    /// string for servers that can do neither.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub answer_only: bool,
    /// The model must answer with a tool call this time: an OpenAI server is sent
    /// `tool_choice: "required"` (when there are native tools); the local engine opens the
    /// answer with `<tool_call>` and the call grammar (with `hermes_tools`) takes it from there.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub call_first: bool,
}

impl CompletionRequest {
    pub fn new(model: impl Into<String>, messages: Vec<Message>) -> Self {
        Self {
            model: model.into(),
            messages,
            tools: Vec::new(),
            max_tokens: None,
            temperature: None,
            stop: Vec::new(),
            context_window: None,
            hermes_tools: Vec::new(),
            hold_bare_calls: false,
            answer_only: false,
            call_first: false,
        }
    }
}

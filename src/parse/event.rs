//! What the parser emits: visible text, reasoning, repaired tool calls and the calls it could not
//! repair, each with a precise reason.

use std::fmt;

/// One thing the model produced, in stream order.
#[derive(Debug, Clone, PartialEq)]
pub enum ParseEvent {
    /// Answer text for the user. Never contains tool-call or think markup the parser consumed.
    Text(String),
    /// Reasoning (inline `<think>` text or out-of-band `reasoning_content`).
    Reasoning(String),
    /// A complete call to a declared tool, repaired and validated against its schema.
    ToolCall(ParsedCall),
    /// A call the model clearly attempted but that cannot be executed; the agent shows a failed
    /// tool card and answers the model with [`crate::parse::corrective_message`].
    Malformed(Malformed),
    /// The think block was still open when the token limit cut generation: tell the user.
    ReasoningCut,
}

/// A tool call ready to run.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedCall {
    /// The declared tool's name, spelled as declared.
    pub name: String,
    /// The arguments, always a JSON object.
    pub arguments: serde_json::Value,
    /// What was fixed on the way (empty for a clean call).
    pub repairs: Vec<Repair>,
}

/// One fix applied to a call; kept so the agent can log or count them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Repair {
    /// The closing tag (`</tool_call>`, `</function>`, `</parameter>`) was missing.
    MissingCloseTag,
    /// Closing braces or brackets were missing and added.
    MissingBraces,
    /// Stray closers (`}` / `]`) after the value were dropped.
    StrayClosers,
    /// Raw newlines or control characters inside strings were escaped.
    ControlChars,
    /// Python literals (`True`, `None`) or single-quoted strings were read.
    PythonLiterals,
    /// Trailing commas were dropped.
    TrailingCommas,
    /// The body sat in a markdown code fence.
    CodeFence,
    /// The call came in another wrapper (`<tools>`, `<function_call>`, …) or none at all.
    Wrapper,
    /// The call was `{"function": {...}}` or `{"type":"function",…}` (OpenAI shape).
    Unwrapped,
    /// The arguments were under `parameters`.
    ParametersKey,
    /// The arguments sat next to the name instead of under `arguments`.
    FlatArguments,
    /// The name was inside the arguments.
    NameInArguments,
    /// The arguments were a JSON-encoded string.
    ArgumentsString,
    /// The arguments were missing or empty and became `{}`.
    EmptyArguments,
    /// The name was missing and inferred from the argument shape (exactly one tool fits).
    InferredName,
    /// The name matched a declared tool only case-insensitively.
    NameCase,
    /// A value was converted to the type the schema declares (`"5"` → 5, XML text → JSON).
    CoercedType,
    /// Text after the call (inside its block) was dropped.
    TrailingText,
}

/// A call that could not be repaired.
#[derive(Debug, Clone, PartialEq)]
pub struct Malformed {
    /// The raw text of the attempt, markup included.
    pub raw: String,
    /// What exactly is wrong.
    pub reason: MalformedReason,
}

/// Why a call attempt failed; `Display` is short and addressed to the model.
#[derive(Debug, Clone, PartialEq)]
pub enum MalformedReason {
    /// The body is empty.
    Empty,
    /// The body is not JSON that any repair step could read.
    InvalidJson { detail: String },
    /// The call names no tool and the argument shape fits none (or several) of them.
    MissingName { candidates: Vec<String> },
    /// The name is not declared (case-insensitive exact match only; never guessed).
    UnknownTool {
        name: String,
        available: Vec<String>,
    },
    /// The JSON names a declared tool but not under `name` / `arguments`.
    WrongKeys { tool: String, keys: Vec<String> },
    /// `arguments` is not an object.
    ArgumentsNotObject { tool: String, found: &'static str },
    /// Required arguments are missing.
    MissingRequired { tool: String, missing: Vec<String> },
    /// An argument has the wrong JSON type.
    WrongType {
        tool: String,
        field: String,
        expected: String,
        found: &'static str,
    },
    /// `<function=` without a name.
    XmlMissingName,
    /// Generation was cut by the token limit while the call was still open.
    Truncated,
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.reason.fmt(f)
    }
}

impl fmt::Display for MalformedReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => write!(f, "the tool call is empty"),
            Self::InvalidJson { detail } => {
                write!(f, "the tool call is not valid JSON ({detail})")
            }
            Self::MissingName { candidates } if candidates.is_empty() => {
                write!(f, "the tool call has no tool name")
            }
            Self::MissingName { candidates } => write!(
                f,
                "the tool call has no tool name and its arguments fit several tools: {}",
                candidates.join(", ")
            ),
            Self::UnknownTool { name, available } => write!(
                f,
                "unknown tool `{name}`; available: {}",
                available.join(", ")
            ),
            Self::WrongKeys { tool, keys } => write!(
                f,
                "the call to `{tool}` uses the keys {}; use \"name\" and \"arguments\"",
                keys.join(", ")
            ),
            Self::ArgumentsNotObject { tool, found } => write!(
                f,
                "the arguments of `{tool}` must be a JSON object, not {found}"
            ),
            Self::MissingRequired { tool, missing } => write!(
                f,
                "`{tool}` is missing required argument(s): {}",
                missing.join(", ")
            ),
            Self::WrongType {
                tool,
                field,
                expected,
                found,
            } => write!(
                f,
                "argument `{field}` of `{tool}` must be {expected}, not {found}"
            ),
            Self::XmlMissingName => write!(f, "the tool name goes in <function=NAME>"),
            Self::Truncated => write!(
                f,
                "the tool call was cut off by the output token limit before it was complete"
            ),
        }
    }
}

/// How a stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// End of turn or a stop string.
    Stop,
    /// Cut by the token limit (`finish_reason: length`, or completion tokens = max tokens): a
    /// call still open is never executed.
    Length,
}

impl StreamEnd {
    /// How a backend stream ended: `length`, or as many completion tokens as `max_tokens` allowed
    /// (vLLM reports `tool_calls` for truncated output), is [`StreamEnd::Length`].
    pub fn from_backend(
        reason: &hearth_backend::FinishReason,
        completion_tokens: Option<u32>,
        max_tokens: Option<u32>,
    ) -> Self {
        let at_limit =
            matches!((completion_tokens, max_tokens), (Some(used), Some(max)) if used >= max);
        if *reason == hearth_backend::FinishReason::Length || at_limit {
            Self::Length
        } else {
            Self::Stop
        }
    }
}

/// The JSON type name of a value, for messages.
pub(crate) fn type_name(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_backend::FinishReason;

    #[test]
    fn truncation_is_detected_from_reason_or_token_count() {
        assert_eq!(
            StreamEnd::from_backend(&FinishReason::Length, None, None),
            StreamEnd::Length
        );
        assert_eq!(
            StreamEnd::from_backend(&FinishReason::ToolCalls, Some(512), Some(512)),
            StreamEnd::Length
        );
        assert_eq!(
            StreamEnd::from_backend(&FinishReason::ToolCalls, Some(100), Some(512)),
            StreamEnd::Stop
        );
        assert_eq!(
            StreamEnd::from_backend(&FinishReason::Stop, None, Some(512)),
            StreamEnd::Stop
        );
    }
}

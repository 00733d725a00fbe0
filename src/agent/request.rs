//! Turns the history into a backend request.

use hearth_backend::{CompletionRequest, Message, NativeToolCall, Role, ToolSpec};

use super::history::HistoryEntry;
use crate::config::EndpointConfig;

/// Builds the request for the next round: the system prompt, then the history in order, with
/// tools sent natively (OpenAI `tools` / `tool_calls`).
pub fn build_request(
    endpoint: &EndpointConfig,
    model: &str,
    system_prompt: &str,
    tools: &[ToolSpec],
    history: &[HistoryEntry],
) -> CompletionRequest {
    let mut messages = vec![Message::system(system_prompt)];
    for entry in history {
        messages.push(match entry {
            HistoryEntry::User { content } => Message {
                role: Role::User,
                content: content.clone(),
                reasoning: None,
                tool_calls: Vec::new(),
                tool_call_id: None,
            },
            HistoryEntry::Assistant {
                text, tool_calls, ..
            } => {
                let mut message = Message::assistant(text.clone());
                message.tool_calls = tool_calls
                    .iter()
                    .map(|c| NativeToolCall {
                        id: c.id.to_string(),
                        name: c.name.clone(),
                        arguments: match &c.arguments {
                            serde_json::Value::String(raw) => raw.clone(),
                            other => other.to_string(),
                        },
                    })
                    .collect();
                message
            }
            HistoryEntry::ToolResult {
                call_id, output, ..
            } => {
                let mut message = Message::text(Role::Tool, output.clone());
                message.tool_call_id = Some(call_id.to_string());
                message
            }
        });
    }
    let mut request = CompletionRequest::new(model, messages);
    request.tools = tools.to_vec();
    request.max_tokens = endpoint.max_tokens;
    request.context_window = endpoint.context_window;
    request
}

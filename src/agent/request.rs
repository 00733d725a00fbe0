//! Turns the history into a backend request.

use hearth_backend::{CompletionRequest, Message, Role};

use super::history::HistoryEntry;
use crate::config::EndpointConfig;

/// Builds the request for the next round: the system prompt, then the history in order.
pub fn build_request(
    endpoint: &EndpointConfig,
    model: &str,
    system_prompt: &str,
    history: &[HistoryEntry],
) -> CompletionRequest {
    let mut messages = vec![Message::system(system_prompt)];
    for entry in history {
        match entry {
            HistoryEntry::User { content } => messages.push(Message {
                role: Role::User,
                content: content.clone(),
                reasoning: None,
                tool_calls: Vec::new(),
                tool_call_id: None,
            }),
            HistoryEntry::Assistant { text, .. } => messages.push(Message::assistant(text.clone())),
            HistoryEntry::ToolResult { output, .. } => messages.push(Message::user(output.clone())),
        }
    }
    let mut request = CompletionRequest::new(model, messages);
    request.max_tokens = endpoint.max_tokens;
    request.context_window = endpoint.context_window;
    request
}

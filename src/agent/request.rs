//! Turns the history into a backend request, in the endpoint's tool format.

use hearth_backend::{CompletionRequest, ToolSpec};
use hearth_conversation::HistoryEntry;

use crate::config::EndpointConfig;
use crate::parse::{ResolvedFormat, render_messages, stop_strings};

/// Builds the request for the next round. In-band formats (Hermes, XML) carry the tool block in
/// the system prompt and the calls inline; native sends OpenAI `tools`.
pub fn build_request(
    endpoint: &EndpointConfig,
    model: &str,
    format: ResolvedFormat,
    system_prompt: &str,
    tools: &[ToolSpec],
    history: &[HistoryEntry],
) -> CompletionRequest {
    let messages = render_messages(format, system_prompt, tools, history);
    let mut request = CompletionRequest::new(model, messages);
    if format == ResolvedFormat::Native {
        request.tools = tools.to_vec();
    }
    request.stop = stop_strings(format);
    request.max_tokens = endpoint.max_tokens;
    request.temperature = endpoint.temperature;
    // `context_window` is set by `fit`, which knows the window the prompt was budgeted for.
    request
}

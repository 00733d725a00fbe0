//! Turns the history into a backend request, in the endpoint's tool format.

use hearth_backend::{CompletionRequest, ContentPart, ToolSpec};
use hearth_conversation::HistoryEntry;

use super::request_fit::RequestShape;
use crate::config::EndpointConfig;
use crate::parse::{
    ResolvedFormat, SESSION_PART, call_stop_strings, render_messages, stop_strings,
};

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

/// A request of its own, made up for one answer (the answer digest, a file asked for whole): a
/// system prompt of `purpose` and the session's own part of `system_prompt` (the project,
/// without the tool block), one user message, no tools; the answer must be text, and stops
/// where a call would open.
pub fn request_of_its_own(
    shape: &RequestShape<'_>,
    purpose: &str,
    system_prompt: &str,
    user: Vec<ContentPart>,
    max_tokens: u32,
) -> CompletionRequest {
    let system = own_system(purpose, system_prompt);
    let messages = render_messages(
        shape.format,
        &system,
        &[],
        &[HistoryEntry::User { content: user }],
    );
    let mut request = CompletionRequest::new(shape.model, messages);
    request.stop = stop_strings(shape.format);
    request.stop.extend(call_stop_strings(shape.format));
    request.max_tokens = Some(max_tokens);
    request.temperature = shape.endpoint.config.temperature;
    request.context_window = Some(shape.context.window_tokens());
    request.answer_only = true;
    request
}

/// The system prompt of a request of its own: `purpose`, then the session's own part of
/// `system_prompt`.
pub fn own_system(purpose: &str, system_prompt: &str) -> String {
    format!("{}\n\n{}", purpose.trim_end(), session_part(system_prompt))
}

/// The session's own part of a system prompt: what follows [`SESSION_PART`] (the project and
/// its instructions), empty where there is none.
fn session_part(system_prompt: &str) -> &str {
    system_prompt
        .split_once(SESSION_PART)
        .map_or("", |(_, own)| own.trim())
}

//! Summarising compaction: one budgeted request that asks the model for a handover note on
//! the early part of the conversation. The caller puts the note in place of that part in
//! later projections; if the call fails, elision alone carries on.

use futures::StreamExt;
use hearth_backend::{BackendError, BackendEvent, CompletionRequest, FinishReason};
use hearth_conversation::HistoryEntry;
use tokio_util::sync::CancellationToken;

use super::model_context::request_profile;
use super::request_fit::RequestShape;
use super::session_context::SessionContext;
use crate::context::{Budget, MESSAGE_OVERHEAD, Summary, build_summary_request, content_tokens};

/// Why a summary could not be made. The session goes on with elision only.
#[derive(Debug, thiserror::Error)]
pub enum CompactError {
    /// Nothing old enough to summarise (or the summary already covers it).
    #[error("nothing to compact yet: the conversation is no longer than its last round")]
    NothingToCompact,
    /// The summary request failed at the backend.
    #[error("the summary request failed: {0}")]
    Backend(#[from] BackendError),
    /// The model answered with no text.
    #[error("the model wrote an empty summary")]
    Empty,
    /// The summary stopped at its token limit, so it is incomplete.
    #[error("the summary did not finish within {0} tokens")]
    Truncated(u32),
    /// The user cancelled.
    #[error("compaction was cancelled")]
    Cancelled,
}

/// Summarises `history[state.start..state.start + covers]` (visible indices) and returns the
/// summary to keep, with `covers` counted from the start of the whole history.
pub async fn summarise(
    shape: &RequestShape<'_>,
    history: &[HistoryEntry],
    state: &SessionContext,
    covers: usize,
    focus: Option<&str>,
    budget: Budget,
    cancel: &CancellationToken,
) -> Result<Summary, CompactError> {
    let visible = history.get(state.start..).unwrap_or_default();
    let span = visible.get(..covers).unwrap_or(visible);
    let counter = shape
        .context
        .counter(shape.endpoint.backend.as_ref(), shape.model);
    let previous = state.visible_summary();
    let messages = build_summary_request(span, previous.as_ref(), focus, &budget, &counter);
    let estimated: usize = messages
        .iter()
        .map(|m| content_tokens(&m.content, &counter) + MESSAGE_OVERHEAD)
        .sum();
    let mut request = CompletionRequest::new(shape.model, messages);
    request.max_tokens = Some(budget.max_tokens);
    request.context_window = Some(shape.context.window_tokens());
    let profile = request_profile(&request);
    let mut stream = shape.endpoint.backend.stream(request, cancel.child_token());
    let mut text = String::new();
    let mut finish = None;
    while let Some(event) = stream.next().await {
        if cancel.is_cancelled() {
            return Err(CompactError::Cancelled);
        }
        // A summary request the server finds too long teaches the same as any other: the next
        // requests (and the next summary) count as the server does.
        if let Err(BackendError::ContextWindowExceeded {
            prompt_tokens,
            window,
            ..
        }) = &event
        {
            shape
                .context
                .record_overflow(&profile, estimated, *prompt_tokens, *window);
        }
        match event? {
            BackendEvent::Text { text: chunk } => text.push_str(&chunk),
            BackendEvent::Finished { reason } => finish = Some(reason),
            _ => {}
        }
    }
    if cancel.is_cancelled() {
        return Err(CompactError::Cancelled);
    }
    if finish == Some(FinishReason::Length) {
        return Err(CompactError::Truncated(budget.max_tokens));
    }
    let text = strip_thinking(&text).trim().to_string();
    if text.is_empty() {
        return Err(CompactError::Empty);
    }
    Ok(Summary {
        covers: state.start + covers,
        text,
    })
}

/// Drops a `<think>…</think>` block a reasoning model wrote inline before its answer.
fn strip_thinking(text: &str) -> &str {
    match text.find("</think>") {
        Some(end) if text.trim_start().starts_with("<think>") => &text[end + "</think>".len()..],
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::strip_thinking;

    #[test]
    fn inline_thinking_is_not_part_of_the_summary() {
        assert_eq!(
            strip_thinking("<think>hmm</think>\n## Goal\nx").trim(),
            "## Goal\nx"
        );
        assert_eq!(strip_thinking("## Goal\nx"), "## Goal\nx");
    }
}

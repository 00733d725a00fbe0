//! Summarising compaction on top of elision: when the prompt passes a share of the window (or
//! the user asks with `/compact`), the model writes a summary of the early part of the
//! conversation, and the projection puts the summary in place of that part.
//!
//! The caller runs the request from [`build_summary_request`] and stores the [`Summary`]
//! beside the history (the history itself is never rewritten). If the call fails, projection
//! without a summary carries on.

use hearth_backend::{ContentPart, Message};
use hearth_conversation::HistoryEntry;

use super::projection::{Projection, project};
use super::slots::ElisionKind;
use super::summary::Summary;
use super::tokens::{Budget, MESSAGE_OVERHEAD, TokenCounter};

/// The instructions of the summary request.
pub const COMPACT_PROMPT: &str = include_str!("../../prompts/compact.md");

/// Compact once the prompt takes this share of the window.
pub const DEFAULT_COMPACT_THRESHOLD: f64 = 0.8;

/// Whether a prompt of `tokens` in a `window` has reached `threshold` (a share, 0.8 = 80%).
pub fn should_compact(tokens: usize, window: u32, threshold: f64) -> bool {
    window > 0 && tokens as f64 >= f64::from(window) * threshold.clamp(0.0, 1.0)
}

/// Automatic compaction waits until elision beyond the current summary saves at least one
/// whole prompt's worth of tokens. Until then masking old outputs alone carries the session
/// (JetBrains measured it as good as summarising, and it is free); after that enough detail is
/// gone that a summary earns its cost. It also keeps compaction from running every few rounds
/// in a tool-heavy session, the loop peers fall into.
const MIN_GAIN_PROMPTS: usize = 1;

/// How many entries a new automatic summary should cover, or `None` when compaction would
/// not help yet. Call it when [`should_compact`] says so for `projection.unelided_tokens`.
///
/// The span reaches up to the recent tail (and at least past the last elided entry), moved
/// forward past tool results so no call loses its result: after compaction the prompt is the
/// summary, the user messages and the tail, with room to grow for several rounds.
pub fn compaction_span(
    history: &[HistoryEntry],
    projection: &Projection,
    current: Option<&Summary>,
) -> Option<usize> {
    let covered = current.map_or(0, |s| s.covers);
    // Truncation of the recent tail is not a reason to summarise it.
    let beyond = projection
        .elided
        .iter()
        .filter(|e| e.kind != ElisionKind::Truncated && e.index >= covered);
    let saved: usize = beyond.clone().map(|e| e.tokens_saved).sum();
    if saved == 0 || saved < projection.tokens * MIN_GAIN_PROMPTS {
        return None;
    }
    let last_elided = beyond.map(|e| e.index).max()? + 1;
    let end = past_results(history, last_elided.max(projection.tail_start));
    (end > covered).then_some(end)
}

/// The span for `/compact`: everything before the last round (the last assistant message and
/// its results stay verbatim), or `None` when that is no more than the `current` summary
/// covers.
pub fn on_demand_span(history: &[HistoryEntry], current: Option<&Summary>) -> Option<usize> {
    let last_round = history
        .iter()
        .rposition(|e| matches!(e, HistoryEntry::Assistant { .. }))?;
    let end = past_results(history, last_round);
    (end > current.map_or(0, |s| s.covers)).then_some(end)
}

/// `at` moved forward past tool results.
fn past_results(history: &[HistoryEntry], at: usize) -> usize {
    let mut end = at.min(history.len());
    while matches!(history.get(end), Some(HistoryEntry::ToolResult { .. })) {
        end += 1;
    }
    end
}

/// The messages of a summary request for `history[..covers]`, fitted to `budget` by `counter`
/// (the caller sends them with `max_tokens` = `budget.max_tokens`).
///
/// The span is projected like any request, so old outputs are elided inside it first (a
/// `previous` summary stands in for what it covers), and is then written out as one transcript
/// in a user message: the summariser reads it as a document rather than continuing it, and no
/// tool format is needed. If the transcript comes out above the budget, the span is projected
/// again into less room until it fits.
pub fn build_summary_request(
    span: &[HistoryEntry],
    previous: Option<&Summary>,
    focus: Option<&str>,
    budget: &Budget,
    counter: &dyn TokenCounter,
) -> Vec<Message> {
    let focus = focus.map(str::trim).filter(|f| !f.is_empty());
    let closing = match focus {
        Some(focus) => {
            format!("\n\n---\nWrite the handover note now. The user asked to focus on: {focus}")
        }
        None => "\n\n---\nWrite the handover note now.".to_string(),
    };
    let fixed = counter.count(COMPACT_PROMPT) + counter.count(&closing) + 2 * MESSAGE_OVERHEAD;
    let available = budget.available();
    let mut room_budget = *budget;
    loop {
        let projection = project(span, fixed, &room_budget, counter, previous);
        let transcript = render_transcript(&projection.entries);
        let user = format!("{transcript}{closing}");
        let tokens = counter.count(COMPACT_PROMPT) + counter.count(&user) + 2 * MESSAGE_OVERHEAD;
        if tokens <= available || room_budget.available() == 0 {
            return vec![Message::system(COMPACT_PROMPT), Message::user(user)];
        }
        // The transcript's headers cost more than the per-message overhead counted for them.
        room_budget = room_budget.tightened(u32::try_from(tokens - available).unwrap_or(u32::MAX));
    }
}

/// The projected entries as a plain-text transcript.
fn render_transcript(entries: &[HistoryEntry]) -> String {
    let mut out = String::from("# Conversation so far\n");
    for entry in entries {
        match entry {
            HistoryEntry::User { content } => {
                out.push_str("\n## User\n");
                for part in content {
                    match part {
                        ContentPart::Text { text } => out.push_str(text),
                        ContentPart::Image { .. } => out.push_str("[image]"),
                    }
                    out.push('\n');
                }
            }
            HistoryEntry::Assistant {
                text,
                reasoning,
                tool_calls,
            } => {
                out.push_str("\n## Assistant\n");
                if let Some(reasoning) = reasoning {
                    out.push_str("(thinking) ");
                    out.push_str(reasoning);
                    out.push('\n');
                }
                out.push_str(text);
                out.push('\n');
                for call in tool_calls {
                    out.push_str(&format!("→ calls {}({})\n", call.name, call.arguments));
                }
            }
            HistoryEntry::ToolResult {
                name,
                output,
                is_error,
                ..
            } => {
                let status = if *is_error { " (failed)" } else { "" };
                out.push_str(&format!("\n## Result of {name}{status}\n{output}\n"));
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "compaction_tests.rs"]
mod tests;

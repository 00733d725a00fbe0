//! Projection: the part of the history the next request carries, fitted to the budget.
//!
//! The stored history is never touched. Every user message is kept; the recent tail is kept
//! verbatim; older tool outputs, then older reasoning, then older assistant prose are replaced
//! by one-line markers, oldest first. Tool results stay in place (only their output is
//! replaced), so every call keeps its result. How far elision reaches is picked from a grid of
//! cut points fixed by the history itself, so successive rounds share their prefix byte for
//! byte until the grid moves; see [`super::cuts`].

use hearth_conversation::HistoryEntry;

use super::markers::{CallTargets, SUMMARY_ACK, SUMMARY_PREFIX};
use super::slots::{Elision, Origin, Slot, total};
use super::summary::Summary;
use super::tokens::{Budget, TokenCounter, entry_tokens};
use super::{cuts, squeeze};
use hearth_backend::ContentPart;

/// The history as the next request will carry it.
#[derive(Debug, Clone, PartialEq)]
pub struct Projection {
    /// The entries to render after the system prompt.
    pub entries: Vec<HistoryEntry>,
    /// What was left out, in history order.
    pub elided: Vec<Elision>,
    /// Prompt tokens: the system prompt plus `entries`, by the counter used.
    pub tokens: usize,
    /// The system prompt's share of `tokens`.
    pub system_tokens: usize,
    /// What the prompt would cost with nothing elided or truncated (the summary applied): the
    /// pressure on the window, for [`super::should_compact`].
    pub unelided_tokens: usize,
    /// How many history entries a compaction summary stands in for.
    pub summary_covers: Option<usize>,
    /// History index where the recent tail, kept verbatim while elision suffices, begins.
    pub tail_start: usize,
    /// Whether `tokens` is within the budget. False only when the system prompt and the user
    /// messages cut to their markers do not fit on their own.
    pub fits: bool,
}

/// Projects `history` into `budget` after a system prompt of `system_tokens`.
///
/// With a `summary`, the entries it covers are replaced by one marked user/assistant pair;
/// the user messages of that span stay, before the pair, as Codex keeps them.
pub fn project(
    history: &[HistoryEntry],
    system_tokens: usize,
    budget: &Budget,
    counter: &dyn TokenCounter,
    summary: Option<&Summary>,
) -> Projection {
    let room = budget.available().saturating_sub(system_tokens);
    let targets = CallTargets::collect(history);
    let covers = summary.map(|s| summary_boundary(history, s.covers));
    let mut slots = Vec::with_capacity(history.len() + 2);
    let first = match (summary, covers) {
        (Some(summary), Some(covers)) => {
            push_summary(&mut slots, history, covers, summary, counter);
            covers
        }
        _ => 0,
    };
    let first_slot = slots.len();
    for (i, entry) in history.iter().enumerate().skip(first) {
        slots.push(Slot {
            origin: Origin::History(i),
            entry: entry.clone(),
            tokens: entry_tokens(entry, counter),
        });
    }
    let unelided_tokens = system_tokens + total(&slots);
    let plan = cuts::elide(&mut slots, first_slot, room, counter, &targets);
    let tail_start = slots
        .get(first_slot + plan.tail)
        .and_then(Slot::index)
        .unwrap_or(history.len());
    let mut elided = plan.elided;
    if total(&slots) > room {
        tracing::debug!(room, "elision alone does not fit; truncating");
        elided.extend(squeeze::squeeze(
            &mut slots,
            first_slot + plan.tail,
            room,
            counter,
            &targets,
        ));
    }
    elided.sort_by_key(|e| e.index);
    let entries_tokens = total(&slots);
    Projection {
        entries: slots.into_iter().map(|s| s.entry).collect(),
        elided,
        tokens: system_tokens + entries_tokens,
        system_tokens,
        unelided_tokens,
        summary_covers: covers,
        tail_start,
        fits: system_tokens + entries_tokens <= budget.available(),
    }
}

/// The summary's boundary moved forward past tool results, so a result never loses its call.
fn summary_boundary(history: &[HistoryEntry], covers: usize) -> usize {
    let mut at = covers.min(history.len());
    while matches!(history.get(at), Some(HistoryEntry::ToolResult { .. })) {
        at += 1;
    }
    at
}

fn push_summary(
    slots: &mut Vec<Slot>,
    history: &[HistoryEntry],
    covers: usize,
    summary: &Summary,
    counter: &dyn TokenCounter,
) {
    for (i, entry) in history.iter().enumerate().take(covers) {
        if matches!(entry, HistoryEntry::User { .. }) {
            slots.push(Slot {
                origin: Origin::History(i),
                entry: entry.clone(),
                tokens: entry_tokens(entry, counter),
            });
        }
    }
    let pair = [
        HistoryEntry::User {
            content: vec![ContentPart::text(format!(
                "{SUMMARY_PREFIX}{}",
                summary.text
            ))],
        },
        HistoryEntry::Assistant {
            text: SUMMARY_ACK.to_string(),
            reasoning: None,
            tool_calls: Vec::new(),
        },
    ];
    for entry in pair {
        slots.push(Slot {
            origin: Origin::Summary,
            tokens: entry_tokens(&entry, counter),
            entry,
        });
    }
}

#[cfg(test)]
#[path = "projection_tests.rs"]
mod tests;

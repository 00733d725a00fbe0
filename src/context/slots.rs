//! The vocabulary of a projection under construction, shared by the projection, the cut
//! points ([`super::cuts`]) and the last-resort squeeze ([`super::squeeze`]): slots, where each
//! came from, and what was elided from them.

use hearth_conversation::HistoryEntry;
use serde::{Deserialize, Serialize};

/// What was left out of one history entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ElisionKind {
    /// A tool result's output was replaced by a marker.
    ToolOutput,
    /// An assistant message's reasoning was dropped.
    Reasoning,
    /// An assistant message's text (and long call arguments) were replaced by markers.
    AssistantText,
    /// Part of a recent entry or a user message was cut out, keeping its head and tail.
    Truncated,
    /// A whole old exchange (an assistant message with its tool results) was left out,
    /// because even its markers did not fit.
    Dropped,
}

/// One elision, for the `/context` report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Elision {
    /// Index of the entry in the stored history.
    pub index: usize,
    pub kind: ElisionKind,
    /// Tokens the elision saved.
    pub tokens_saved: usize,
}

/// Where a slot of the projection came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// The stored history entry with this index.
    History(usize),
    /// The compaction summary or its acknowledgement.
    Summary,
}

/// One entry of the projection under construction.
#[derive(Debug, Clone)]
pub(crate) struct Slot {
    pub origin: Origin,
    pub entry: HistoryEntry,
    pub tokens: usize,
}

impl Slot {
    pub fn index(&self) -> Option<usize> {
        match self.origin {
            Origin::History(i) => Some(i),
            Origin::Summary => None,
        }
    }

    pub fn is_user(&self) -> bool {
        matches!(self.entry, HistoryEntry::User { .. })
    }
}

/// Tokens of all slots.
pub(crate) fn total(slots: &[Slot]) -> usize {
    slots.iter().map(|s| s.tokens).sum()
}

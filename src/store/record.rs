//! The records of a session file, as the rest of hearth sees them: images are inline
//! [`ContentPart::Image`]s here; on disk they are references to blobs (see `wire.rs`).
//!
//! A session file is JSON Lines. Line 1 is a [`Header`]; every later line is one
//! [`Record`], each self-contained, in the order they happened. Records are only ever
//! appended: a setting that changes gets a new record, and the last one wins.

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use hearth_backend::ContentPart;
use serde::{Deserialize, Serialize};

use hearth_conversation::{AgentEvent, AlwaysRules, HistoryEntry, Mode, ModelRef, SessionId};

/// The format version this hearth writes and the newest it reads.
pub const FORMAT_VERSION: u32 = 1;

/// One line of a session file after the header: what front ends append and load gives back.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// One prompt round (or one part of one; see [`Round::user`]).
    Round(Round),
    /// The mode and model from now on (the whole settings, not a change).
    Settings(SettingsRecord),
    /// A title set by the user or the agent; overrides the one taken from the first prompt.
    Title { title: String },
    /// The "always allow / always reject" permission answers, opaque to the store: the policy
    /// module owns their shape. The last record wins.
    AlwaysRules { rules: AlwaysRules },
    /// A compaction marker: what was sent to the model in place of the older rounds. The stored
    /// rounds stay as they were; this only says how to project them.
    Summary(SummaryRecord),
}

/// Line 1 of a session file: what the session is. [`super::Store::create`] writes it, with the
/// first record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// [`FORMAT_VERSION`] of the hearth that created the file.
    pub version: u32,
    pub id: SessionId,
    /// The canonical cwd of the session's project.
    pub cwd: PathBuf,
    pub created_at: DateTime<Utc>,
}

/// One round as it ended: what the user sent, what the client was shown, what the model will
/// see again, and how it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    /// Counts up from 1 within the session.
    pub number: u64,
    /// When the round ended.
    pub at: DateTime<Utc>,
    /// The user's prompt blocks, replayed as a user message. Empty for a round that continues a
    /// prompt (when the front end stores one record per model request).
    pub user: Vec<ContentPart>,
    /// What the client was shown, in order, without the prompt itself. Adjacent text and
    /// thought chunks are merged when stored.
    pub events: Vec<AgentEvent>,
    /// The history entries this round added (the user entry included), as the model will see
    /// them again.
    pub history: Vec<HistoryEntry>,
    /// The context window's fill at the end of the round, when known.
    pub usage: Option<UsageRecord>,
    pub outcome: RoundOutcome,
}

/// How full the context window was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageRecord {
    pub used: u64,
    pub size: u64,
}

/// How a round ended. Rounds are stored in all three cases, so a cancelled or failed turn is
/// not lost either.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RoundOutcome {
    Completed,
    Cancelled,
    Failed { message: String },
}

/// The settings in force from this record on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingsRecord {
    pub mode: Mode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelRef>,
}

/// The context state from this record on: a compaction summary, and where the model's view
/// starts after `/clear`. The last record wins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryRecord {
    /// Rounds stored when the record was written.
    pub covers_rounds: u64,
    /// The summary; empty when there is none (a `/clear` without a summary).
    pub text: String,
    /// History entries, from the first, that `text` stands in for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covers_entries: Option<u64>,
    /// History entries before this one are out of the model's view (`/clear`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<u64>,
}

/// Merges adjacent [`AgentEvent::AgentText`] chunks, and adjacent
/// [`AgentEvent::AgentThought`] chunks, so a replay sends one update per paragraph, not one
/// per streamed token. Everything else keeps its place.
pub fn coalesce_events(events: Vec<AgentEvent>) -> Vec<AgentEvent> {
    let mut out: Vec<AgentEvent> = Vec::with_capacity(events.len());
    for event in events {
        match (out.last_mut(), event) {
            (Some(AgentEvent::AgentText { text }), AgentEvent::AgentText { text: more }) => {
                text.push_str(&more)
            }
            (Some(AgentEvent::AgentThought { text }), AgentEvent::AgentThought { text: more }) => {
                text.push_str(&more)
            }
            (_, event) => out.push(event),
        }
    }
    out
}

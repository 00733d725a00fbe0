//! The on-disk form of records. It differs from [`Record`] in one way: image bytes live in
//! blobs and records carry their hash, so an image sent once and kept in history is stored once.
//!
//! Every line is `{"type": "<kind>", ...}` with kind one of `header`, `round`, `settings`,
//! `title`, `always_rules`, `summary`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use hearth_backend::ContentPart;
use hearth_conversation::{AgentEvent, AlwaysRules, HistoryEntry};
use serde::{Deserialize, Serialize};

use super::blob::{BlobHash, BlobStore};
use super::error::StoreError;
use super::record::{
    Header, Record, Round, RoundOutcome, SettingsRecord, SummaryRecord, UsageRecord,
    coalesce_events,
};
use super::warning::LoadProblem;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum WireRecord {
    Header(Header),
    Round(WireRound),
    Settings(SettingsRecord),
    Title { title: String },
    AlwaysRules { rules: AlwaysRules },
    Summary(SummaryRecord),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct WireRound {
    number: u64,
    at: DateTime<Utc>,
    #[serde(default)]
    pub(crate) user: Vec<WirePart>,
    #[serde(default)]
    events: Vec<WireEvent>,
    #[serde(default)]
    history: Vec<WireEntry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    usage: Option<UsageRecord>,
    outcome: RoundOutcome,
}

/// A content part on disk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum WirePart {
    Text {
        text: String,
    },
    /// An image kept inline: only when its data is not canonical base64 (so it could not be
    /// restored byte for byte from a blob).
    Image {
        mime_type: String,
        data: String,
    },
    /// An image whose bytes are the blob `sha256`.
    ImageRef {
        mime_type: String,
        sha256: BlobHash,
    },
}

/// A history entry on disk: user content with blob references; every other entry as is.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireEntry {
    User {
        content: Vec<WirePart>,
    },
    #[serde(untagged)]
    Other(HistoryEntry),
}

/// An event on disk: a user message with blob references; every other event as is.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireEvent {
    UserMessage {
        content: Vec<WirePart>,
    },
    #[serde(untagged)]
    Other(AgentEvent),
}

/// Turns a record into its disk form, writing the blobs it needs first.
pub(crate) fn to_wire(record: Record, blobs: &BlobStore) -> Result<WireRecord, StoreError> {
    Ok(match record {
        Record::Round(r) => WireRecord::Round(round_to_wire(r, blobs)?),
        Record::Settings(s) => WireRecord::Settings(s),
        Record::Title { title } => WireRecord::Title { title },
        Record::AlwaysRules { rules } => WireRecord::AlwaysRules { rules },
        Record::Summary(s) => WireRecord::Summary(s),
    })
}

fn round_to_wire(r: Round, blobs: &BlobStore) -> Result<WireRound, StoreError> {
    let parts = |content: Vec<ContentPart>| -> Result<Vec<WirePart>, StoreError> {
        content
            .into_iter()
            .map(|p| part_to_wire(p, blobs))
            .collect()
    };
    let events = coalesce_events(r.events)
        .into_iter()
        .map(|e| match e {
            AgentEvent::UserMessage { content } => Ok(WireEvent::UserMessage {
                content: parts(content)?,
            }),
            other => Ok(WireEvent::Other(other)),
        })
        .collect::<Result<_, StoreError>>()?;
    let history = r
        .history
        .into_iter()
        .map(|h| match h {
            HistoryEntry::User { content } => Ok(WireEntry::User {
                content: parts(content)?,
            }),
            other => Ok(WireEntry::Other(other)),
        })
        .collect::<Result<_, StoreError>>()?;
    Ok(WireRound {
        number: r.number,
        at: r.at,
        user: parts(r.user)?,
        events,
        history,
        usage: r.usage,
        outcome: r.outcome,
    })
}

fn part_to_wire(part: ContentPart, blobs: &BlobStore) -> Result<WirePart, StoreError> {
    Ok(match part {
        ContentPart::Text { text } => WirePart::Text { text },
        ContentPart::Image { mime_type, data } => match STANDARD.decode(&data) {
            Ok(bytes) => WirePart::ImageRef {
                mime_type,
                sha256: blobs.put(&bytes)?,
            },
            Err(e) => {
                tracing::debug!("image data is not canonical base64 ({e}); stored inline");
                WirePart::Image { mime_type, data }
            }
        },
    })
}

/// Turns a disk record back into a record, reading the blobs it names; `None` for a header
/// (the loader handles line 1 itself). A blob that cannot be read becomes a text placeholder
/// and a problem in `problems`.
pub(crate) fn from_wire(
    wire: WireRecord,
    blobs: &BlobStore,
    problems: &mut Vec<LoadProblem>,
) -> Option<Record> {
    Some(match wire {
        WireRecord::Header(_) => return None,
        WireRecord::Round(r) => Record::Round(round_from_wire(r, blobs, problems)),
        WireRecord::Settings(s) => Record::Settings(s),
        WireRecord::Title { title } => Record::Title { title },
        WireRecord::AlwaysRules { rules } => Record::AlwaysRules { rules },
        WireRecord::Summary(s) => Record::Summary(s),
    })
}

fn round_from_wire(r: WireRound, blobs: &BlobStore, problems: &mut Vec<LoadProblem>) -> Round {
    let mut parts = |content: Vec<WirePart>| -> Vec<ContentPart> {
        content
            .into_iter()
            .map(|p| part_from_wire(p, blobs, problems))
            .collect()
    };
    let user = parts(r.user);
    let events = r
        .events
        .into_iter()
        .map(|e| match e {
            WireEvent::UserMessage { content } => AgentEvent::UserMessage {
                content: parts(content),
            },
            WireEvent::Other(other) => other,
        })
        .collect();
    let history = r
        .history
        .into_iter()
        .map(|h| match h {
            WireEntry::User { content } => HistoryEntry::User {
                content: parts(content),
            },
            WireEntry::Other(other) => other,
        })
        .collect();
    Round {
        number: r.number,
        at: r.at,
        user,
        events,
        history,
        usage: r.usage,
        outcome: r.outcome,
    }
}

/// The text shown in place of an image whose blob is gone.
pub const MISSING_IMAGE_TEXT: &str = "[image no longer available]";

fn part_from_wire(
    part: WirePart,
    blobs: &BlobStore,
    problems: &mut Vec<LoadProblem>,
) -> ContentPart {
    match part {
        WirePart::Text { text } => ContentPart::Text { text },
        WirePart::Image { mime_type, data } => ContentPart::Image { mime_type, data },
        WirePart::ImageRef { mime_type, sha256 } => match blobs.get(&sha256) {
            Ok(Some(bytes)) => ContentPart::Image {
                mime_type,
                data: STANDARD.encode(bytes),
            },
            Ok(None) => {
                problems.push(LoadProblem::MissingBlob(sha256));
                ContentPart::text(MISSING_IMAGE_TEXT)
            }
            Err(e) => {
                problems.push(LoadProblem::UnreadableBlob {
                    sha256,
                    message: e.to_string(),
                });
                ContentPart::text(MISSING_IMAGE_TEXT)
            }
        },
    }
}

//! Folding a loaded session's records into the state a front end restores: settings, history
//! for the model, and the events to replay to the client.

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use hearth_backend::ContentPart;
use hearth_conversation::{AgentEvent, AlwaysRules, HistoryEntry, Mode, ModelRef, SessionId};

use super::load::LoadedSession;
use super::record::{Record, SummaryRecord, UsageRecord};

/// Titles taken from a prompt are cut to this many characters.
pub const TITLE_MAX_CHARS: usize = 80;

/// A session as it stood after its last stored record.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSnapshot {
    pub id: SessionId,
    pub cwd: PathBuf,
    pub created_at: DateTime<Utc>,
    /// The last stored mode; `None` when never stored (use the configured default).
    pub mode: Option<Mode>,
    /// The last stored model; `None` when never stored. It may no longer exist: check it.
    pub model: Option<ModelRef>,
    /// Everything the model saw, in order, images restored.
    pub history: Vec<HistoryEntry>,
    /// What to send the client on `session/load`, in order: per round, its prompt as an
    /// [`AgentEvent::UserMessage`] (when it had one), then the round's events.
    pub replay: Vec<AgentEvent>,
    /// A stored title, else one made from the first prompt.
    pub title: Option<String>,
    /// The last stored permission rules.
    pub always_rules: Option<AlwaysRules>,
    /// The context fill after the last round that reported it.
    pub usage: Option<UsageRecord>,
    /// Compaction summaries, oldest first.
    pub summaries: Vec<SummaryRecord>,
    /// Stored rounds.
    pub rounds: u64,
    /// The number the next round takes.
    pub next_round: u64,
}

impl SessionSnapshot {
    /// A session with nothing stored yet.
    pub fn empty(id: SessionId, cwd: PathBuf) -> Self {
        Self {
            id,
            cwd,
            created_at: Utc::now(),
            mode: None,
            model: None,
            history: Vec::new(),
            replay: Vec::new(),
            title: None,
            always_rules: None,
            usage: None,
            summaries: Vec::new(),
            rounds: 0,
            next_round: 1,
        }
    }
}

impl LoadedSession {
    /// Folds the records, in order, into the session's current state.
    pub fn state(&self) -> SessionSnapshot {
        let mut s = SessionSnapshot {
            created_at: self.header.created_at,
            ..SessionSnapshot::empty(self.header.id.clone(), self.header.cwd.clone())
        };
        let mut prompt_title = None;
        for record in &self.records {
            match record {
                Record::Round(round) => {
                    if !round.user.is_empty() {
                        if prompt_title.is_none() {
                            prompt_title = title_from_prompt(&round.user);
                        }
                        s.replay.push(AgentEvent::UserMessage {
                            content: round.user.clone(),
                        });
                    }
                    s.replay.extend(round.events.iter().cloned());
                    s.history.extend(round.history.iter().cloned());
                    s.usage = round.usage.or(s.usage);
                    s.rounds += 1;
                    s.next_round = s.next_round.max(round.number + 1);
                }
                Record::Settings(settings) => {
                    s.mode = Some(settings.mode);
                    s.model = settings.model.clone();
                }
                Record::Title { title } => s.title = Some(title.clone()),
                Record::AlwaysRules { rules } => s.always_rules = Some(rules.clone()),
                Record::Summary(summary) => s.summaries.push(summary.clone()),
            }
        }
        s.title = s.title.or(prompt_title);
        s
    }
}

/// The words of a prompt as its user wrote them: its text, without the `<context>` parts an
/// assist or the editor put before it (attached files, the project's layout).
pub fn prompt_words(parts: &[ContentPart]) -> Vec<&str> {
    parts
        .iter()
        .filter_map(|p| match p {
            ContentPart::Text { text } if !text.starts_with("<context ") => {
                Some(text.split_whitespace())
            }
            ContentPart::Text { .. } | ContentPart::Image { .. } => None,
        })
        .flatten()
        .collect()
}

/// A title from a prompt: its text with whitespace runs collapsed, at most
/// [`TITLE_MAX_CHARS`] characters (ending in `…` when cut). `None` when the prompt has no text.
pub fn title_from_prompt(parts: &[ContentPart]) -> Option<String> {
    let words = prompt_words(parts);
    let text = words.join(" ");
    if text.is_empty() {
        return None;
    }
    if text.chars().count() <= TITLE_MAX_CHARS {
        return Some(text);
    }
    let cut = text
        .char_indices()
        .nth(TITLE_MAX_CHARS - 1)
        .map_or(text.len(), |(at, _)| at);
    Some(format!("{}…", text[..cut].trim_end()))
}

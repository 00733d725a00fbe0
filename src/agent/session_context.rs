//! A session's context state beside its history: where the model's view starts (after
//! `/clear`), the compaction summary in force, and the last projection's figures for
//! `/context`. The history itself is never rewritten.

use crate::context::{ContextReport, Summary};
use crate::store::SummaryRecord;

/// What the next request is projected from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionContext {
    /// History entries before this index are out of the model's view (`/clear`).
    pub start: usize,
    /// The summary in force; its `covers` counts entries from the start of the history.
    pub summary: Option<Summary>,
    /// The last request's projection, for `/context`.
    pub last_report: Option<ContextReport>,
}

impl SessionContext {
    /// The state a stored record describes (the last one wins).
    pub fn from_record(record: &SummaryRecord) -> Self {
        let start = record.start.unwrap_or(0) as usize;
        let summary = match (record.covers_entries, record.text.is_empty()) {
            (Some(covers), false) => Some(Summary {
                covers: covers as usize,
                text: record.text.clone(),
            }),
            _ => None,
        };
        Self {
            start,
            summary,
            last_report: None,
        }
    }

    /// The record that brings this state back; `rounds` is how many rounds are stored.
    pub fn to_record(&self, rounds: u64) -> SummaryRecord {
        SummaryRecord {
            covers_rounds: rounds,
            text: self
                .summary
                .as_ref()
                .map(|s| s.text.clone())
                .unwrap_or_default(),
            covers_entries: self.summary.as_ref().map(|s| s.covers as u64),
            start: (self.start > 0).then_some(self.start as u64),
        }
    }

    /// The summary as seen from `start`: its `covers` relative to the visible history, or
    /// `None` when it covers nothing there.
    pub fn visible_summary(&self) -> Option<Summary> {
        let summary = self.summary.as_ref()?;
        (summary.covers > self.start).then(|| Summary {
            covers: summary.covers - self.start,
            text: summary.text.clone(),
        })
    }

    /// Starts a new context at `history_len`: nothing before it is sent again.
    pub fn clear(&mut self, history_len: usize) {
        self.start = history_len;
        self.summary = None;
        self.last_report = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_state_comes_back_the_same() {
        let state = SessionContext {
            start: 4,
            summary: Some(Summary {
                covers: 10,
                text: "did things".into(),
            }),
            last_report: None,
        };
        assert_eq!(SessionContext::from_record(&state.to_record(3)), state);
        let cleared = SessionContext {
            start: 12,
            summary: None,
            last_report: None,
        };
        assert_eq!(SessionContext::from_record(&cleared.to_record(5)), cleared);
    }

    #[test]
    fn the_summary_is_relative_to_the_start() {
        let mut state = SessionContext {
            start: 0,
            summary: Some(Summary {
                covers: 10,
                text: "s".into(),
            }),
            last_report: None,
        };
        assert_eq!(state.visible_summary().map(|s| s.covers), Some(10));
        state.start = 4;
        assert_eq!(state.visible_summary().map(|s| s.covers), Some(6));
        state.clear(20);
        assert_eq!(state.visible_summary(), None);
        assert_eq!(state.start, 20);
    }
}

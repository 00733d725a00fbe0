//! Saving a session as it goes: one round record per prompt (flushed when the turn ends,
//! however it ends), settings when they change. The store does the file work; this decides
//! what a round is.

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use chrono::Utc;
use hearth_backend::ContentPart;
use hearth_conversation::{
    AgentEvent, AlwaysRules, HistoryEntry, PermissionAnswer, Reach, SessionSettings, TerminalId,
    ToolCard,
};

use super::session_context::SessionContext;
use super::turn::{StopReason, TurnError};
use crate::host::{ClientOps, ClientOpsError, ExitStatus, TerminalOutput, TerminalRequest};
use crate::store::{
    Record, Round, RoundOutcome, SessionWriter, SettingsRecord, UsageRecord, coalesce_events,
};
use crate::sync::lock;

/// A session's link to its file.
pub struct Persistence {
    writer: SessionWriter,
    next_round: AtomicU64,
    /// The rules as last written, to write them again only when they change.
    saved_rules: Mutex<AlwaysRules>,
    /// Settings waiting for the first round: a session nobody prompts leaves no file behind.
    pending_settings: Mutex<Option<SessionSettings>>,
}

impl Persistence {
    pub fn new(writer: SessionWriter, next_round: u64, rules: AlwaysRules) -> Self {
        Self {
            writer,
            next_round: AtomicU64::new(next_round),
            saved_rules: Mutex::new(rules),
            pending_settings: Mutex::new(None),
        }
    }

    /// Rounds already stored.
    pub fn rounds(&self) -> u64 {
        self.next_round.load(Ordering::SeqCst).saturating_sub(1)
    }

    pub fn save_settings(&self, settings: &SessionSettings) {
        if self.rounds() == 0 {
            *lock(&self.pending_settings) = Some(settings.clone());
            return;
        }
        self.write_settings(settings);
    }

    fn write_settings(&self, settings: &SessionSettings) {
        self.writer.append(Record::Settings(SettingsRecord {
            mode: settings.mode,
            model: settings.model.clone(),
        }));
    }

    /// Writes the round a prompt produced and waits until it is on disk.
    pub async fn save_round(
        &self,
        prompt: Vec<ContentPart>,
        recorder: &Recorder<'_>,
        added: &[HistoryEntry],
        outcome: &Result<StopReason, TurnError>,
        rules: &AlwaysRules,
    ) {
        let events = recorder.take();
        let usage = events.iter().rev().find_map(|e| match e {
            AgentEvent::Usage { used, size } => Some(UsageRecord {
                used: *used,
                size: *size,
            }),
            _ => None,
        });
        let outcome = match outcome {
            Ok(StopReason::Cancelled) => RoundOutcome::Cancelled,
            Ok(_) => RoundOutcome::Completed,
            Err(err) => RoundOutcome::Failed {
                message: err.to_string(),
            },
        };
        if let Some(settings) = lock(&self.pending_settings).take() {
            self.write_settings(&settings);
        }
        let number = self.next_round.fetch_add(1, Ordering::SeqCst);
        // `user` is what the replay shows; `history` (which starts with the same prompt) is
        // what the model sees again.
        let history = added.to_vec();
        self.writer.append(Record::Round(Round {
            number,
            at: Utc::now(),
            user: prompt,
            events: coalesce_events(events),
            history,
            usage,
            outcome,
        }));
        {
            let mut saved = self
                .saved_rules
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if *saved != *rules {
                *saved = rules.clone();
                self.writer.append(Record::AlwaysRules {
                    rules: rules.clone(),
                });
            }
        }
        if let Err(err) = self.writer.flush().await {
            tracing::error!(path = %self.writer.path().display(), "cannot save the session: {err}");
        }
    }

    /// Writes the context state (summary, `/clear` start) and waits until it is on disk. A
    /// session with no stored round has nothing for it to apply to, so nothing is written.
    /// Puts a session that has no round yet on disk now (its header and settings), so its id
    /// can be resumed and loaded, in this process and later ones, before anyone prompts it.
    /// (The session list leaves out sessions without rounds.)
    pub async fn create_now(&self) {
        if let Some(settings) = lock(&self.pending_settings).take() {
            self.write_settings(&settings);
        }
        if let Err(err) = self.writer.flush().await {
            tracing::error!(path = %self.writer.path().display(), "cannot save the session: {err}");
        }
    }

    pub async fn save_context(&self, context: &SessionContext) {
        if self.rounds() == 0 {
            return;
        }
        self.writer
            .append(Record::Summary(context.to_record(self.rounds())));
        if let Err(err) = self.writer.flush().await {
            tracing::error!(path = %self.writer.path().display(), "cannot save the session: {err}");
        }
    }

    pub fn path(&self) -> &Path {
        self.writer.path()
    }
}

/// Passes everything through to the real client and keeps a copy of each event for the round
/// record.
pub struct Recorder<'a> {
    inner: &'a dyn ClientOps,
    events: Mutex<Vec<AgentEvent>>,
}

impl<'a> Recorder<'a> {
    pub fn new(inner: &'a dyn ClientOps) -> Self {
        Self {
            inner,
            events: Mutex::new(Vec::new()),
        }
    }

    fn take(&self) -> Vec<AgentEvent> {
        std::mem::take(
            &mut *self
                .events
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }
}

#[async_trait]
impl ClientOps for Recorder<'_> {
    async fn read_text_file(
        &self,
        path: &Path,
        line: Option<u32>,
        limit: Option<u32>,
    ) -> Result<String, ClientOpsError> {
        self.inner.read_text_file(path, line, limit).await
    }

    async fn write_text_file(&self, path: &Path, content: &str) -> Result<(), ClientOpsError> {
        self.inner.write_text_file(path, content).await
    }

    async fn create_terminal(
        &self,
        request: TerminalRequest,
    ) -> Result<TerminalId, ClientOpsError> {
        self.inner.create_terminal(request).await
    }

    async fn terminal_output(&self, id: &TerminalId) -> Result<TerminalOutput, ClientOpsError> {
        let output = self.inner.terminal_output(id).await?;
        Ok(output)
    }

    async fn wait_for_exit(&self, id: &TerminalId) -> Result<ExitStatus, ClientOpsError> {
        self.inner.wait_for_exit(id).await
    }

    async fn kill_terminal(&self, id: &TerminalId) -> Result<(), ClientOpsError> {
        self.inner.kill_terminal(id).await
    }

    async fn release_terminal(&self, id: &TerminalId) -> Result<(), ClientOpsError> {
        self.inner.release_terminal(id).await
    }

    async fn request_permission(&self, card: &ToolCard, reach: Reach) -> PermissionAnswer {
        self.inner.request_permission(card, reach).await
    }

    fn send(&self, event: AgentEvent) {
        self.events
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(event.clone().with_terminals_as_text());
        self.inner.send(event);
    }
}

//! A session's live state, shared by whichever front end drives it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use hearth_conversation::{AlwaysRules, HistoryEntry, SessionId, SessionSettings};
use tokio_util::sync::CancellationToken;

use super::persist::Persistence;
use super::session_context::SessionContext;
use crate::mcp::SessionTools;
use crate::sync::lock;

/// One registered turn: its number (turns of a session count up) and its cancel token. The
/// ticket is the turn's guard: dropping it ends the turn (unless a newer turn replaced it), so
/// the turn ends on every path out of whoever holds it, early returns and panics included.
#[derive(Debug)]
#[must_use = "the turn ends when its ticket is dropped"]
pub struct TurnTicket {
    pub number: u64,
    pub cancel: CancellationToken,
    running: Arc<Mutex<Option<RunningTurn>>>,
}

impl Drop for TurnTicket {
    fn drop(&mut self) {
        let mut running = lock(&self.running);
        if running.as_ref().is_some_and(|t| t.number == self.number) {
            *running = None;
        }
    }
}

/// What the session keeps of its running turn.
#[derive(Debug)]
struct RunningTurn {
    number: u64,
    cancel: CancellationToken,
}

/// One session. Settings change at any time (quick, never held across an await); the history
/// is held for the whole of a turn, so turns on one session run one at a time.
pub struct Session {
    pub id: SessionId,
    /// The working directory: where tools resolve paths and commands run. A client that
    /// reopens the session in another directory moves it there (see [`Session::move_to`]).
    cwd: Mutex<PathBuf>,
    /// Further directories the client made part of the session (ACP `additionalDirectories`):
    /// tools work there as freely as in `cwd`. Given anew whenever the client opens the
    /// session; not stored.
    extra_dirs: Mutex<Vec<PathBuf>>,
    settings: Mutex<SessionSettings>,
    history: tokio::sync::Mutex<Vec<HistoryEntry>>,
    running: Arc<Mutex<Option<RunningTurn>>>,
    /// Turns begun so far: numbers count up even after the slot empties.
    turns: AtomicU64,
    /// "Always allow / always reject" answers given in this session.
    rules: Mutex<AlwaysRules>,
    /// Where the session is saved; `None` when the store is unavailable.
    persist: Option<Persistence>,
    /// What the model sees of the history: start after `/clear`, the summary in force.
    context: Mutex<SessionContext>,
    /// The session's own tools (built-ins plus its MCP servers' tools), owning the MCP
    /// connections: dropping the session stops its servers. `None` uses the core's tools.
    tools: Option<SessionTools>,
}

impl Session {
    pub fn new(
        id: SessionId,
        cwd: PathBuf,
        settings: SessionSettings,
        history: Vec<HistoryEntry>,
    ) -> Self {
        Self {
            id,
            cwd: Mutex::new(cwd),
            extra_dirs: Mutex::new(Vec::new()),
            settings: Mutex::new(settings),
            history: tokio::sync::Mutex::new(history),
            running: Arc::new(Mutex::new(None)),
            turns: AtomicU64::new(0),
            rules: Mutex::new(AlwaysRules::default()),
            persist: None,
            context: Mutex::new(SessionContext::default()),
            tools: None,
        }
    }

    /// Gives the session its own tools (see [`SessionTools`]).
    pub fn with_tools(mut self, tools: SessionTools) -> Self {
        self.tools = Some(tools);
        self
    }

    /// The session's own tools, when it has any besides the core's.
    pub fn tools(&self) -> Option<&SessionTools> {
        self.tools.as_ref()
    }

    /// Saves this session through `persist` from now on.
    pub fn persisted(mut self, persist: Persistence) -> Self {
        self.persist = Some(persist);
        self
    }

    /// Starts from remembered "always" answers (a restored session).
    pub fn with_rules(self, rules: AlwaysRules) -> Self {
        *lock(&self.rules) = rules;
        self
    }

    /// Starts from a stored context state (a restored session).
    pub fn with_context(self, context: SessionContext) -> Self {
        *lock(&self.context) = context;
        self
    }

    /// The session's context state: where the model's view starts, the summary in force.
    pub fn context(&self) -> &Mutex<SessionContext> {
        &self.context
    }

    pub fn persistence(&self) -> Option<&Persistence> {
        self.persist.as_ref()
    }

    /// The working directory now. A running turn keeps the one it started with.
    pub fn cwd(&self) -> PathBuf {
        lock(&self.cwd).clone()
    }

    /// Makes `cwd` the working directory from the next turn on (a client reopened the session
    /// in another project). Returns the directory it had.
    pub fn move_to(&self, cwd: PathBuf) -> PathBuf {
        std::mem::replace(&mut *lock(&self.cwd), cwd)
    }

    /// The extra directories the client named for this session.
    pub fn extra_dirs(&self) -> Vec<PathBuf> {
        lock(&self.extra_dirs).clone()
    }

    /// Sets the extra directories (from the client's request that opened the session).
    pub fn set_extra_dirs(&self, dirs: Vec<PathBuf>) {
        *lock(&self.extra_dirs) = dirs;
    }

    pub fn settings(&self) -> SessionSettings {
        lock(&self.settings).clone()
    }

    /// Changes the settings and saves them.
    pub fn update_settings(&self, change: impl FnOnce(&mut SessionSettings)) -> SessionSettings {
        let updated = {
            let mut settings = lock(&self.settings);
            change(&mut settings);
            settings.clone()
        };
        if let Some(persist) = &self.persist {
            persist.save_settings(&updated);
        }
        updated
    }

    /// Registers a new turn and cancels the one still running, if any: a second prompt on a
    /// busy session replaces the first. The turn lasts until the ticket is dropped.
    pub fn begin_turn(&self) -> TurnTicket {
        let mut running = lock(&self.running);
        let number = self.turns.fetch_add(1, Ordering::Relaxed) + 1;
        let cancel = CancellationToken::new();
        let current = RunningTurn {
            number,
            cancel: cancel.clone(),
        };
        if let Some(previous) = running.replace(current) {
            previous.cancel.cancel();
        }
        TurnTicket {
            number,
            cancel,
            running: Arc::clone(&self.running),
        }
    }

    /// Cancels the running turn, if any. Returns whether there was one.
    pub fn cancel(&self) -> bool {
        match lock(&self.running).as_ref() {
            Some(ticket) => {
                ticket.cancel.cancel();
                true
            }
            None => false,
        }
    }

    pub fn rules(&self) -> &Mutex<AlwaysRules> {
        &self.rules
    }

    /// The history, waiting for a running turn to finish with it.
    pub async fn history(&self) -> tokio::sync::MutexGuard<'_, Vec<HistoryEntry>> {
        self.history.lock().await
    }
}

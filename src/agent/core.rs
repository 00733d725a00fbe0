//! `AgentCore`: what every front end shares — the configuration, the model catalog, the tools —
//! and the one way to run a prompt on a session.

use std::path::{Path, PathBuf};

use hearth_backend::ContentPart;
use hearth_conversation::{
    AgentEvent, AlwaysRules, HistoryEntry, Mode, ModelRef, SessionId, SessionSettings,
};

use super::catalog::{Catalog, Endpoint, ModelChoice};
use super::model_context::ModelContexts;
use super::persist::{Persistence, Recorder};
use super::session::{Session, TurnTicket};
use super::session_context::SessionContext;
use super::turn::{StopReason, TurnError, run_turn};
use super::turn_context::TurnContext;
use crate::config::{Assist, Config};
use crate::host::ClientOps;
use crate::parse::SESSION_PART;
use crate::store::{SessionSnapshot, Store, StoreError, title_from_prompt};
use crate::sync::lock;
use crate::tools::{
    Resolved, Roots, ToolLimits, ToolRegistry, attach_named_files, lookup_terms, plan_dir,
    plan_mode_prompt, project_map,
};

const SYSTEM_PROMPT: &str = include_str!("../../prompts/system.md");

pub struct AgentCore {
    pub config: Config,
    pub catalog: Catalog,
    pub tools: ToolRegistry,
    pub limits: ToolLimits,
    /// hearth's data directory (`$XDG_DATA_HOME/hearth`, or `$HEARTH_DATA_DIR`): plans, sessions.
    pub data_dir: PathBuf,
    /// The user's home, for `~` in paths the model writes.
    pub home: Option<PathBuf>,
    /// Where sessions are saved; `None` runs without saving (said once in the log).
    pub store: Option<Store>,
    /// Each model's window and token accounting, learnt as sessions use it.
    pub contexts: ModelContexts,
    /// A private temporary data directory this core owns (when there is no data root),
    /// removed when the core is dropped.
    scratch: Option<tempfile::TempDir>,
}

impl AgentCore {
    pub fn new(config: Config, catalog: Catalog, data_dir: PathBuf) -> Self {
        let limits = ToolLimits {
            mcp_call_timeout_secs: config.agent.mcp_call_timeout_secs,
            ..ToolLimits::default()
        };
        Self {
            config,
            catalog,
            tools: ToolRegistry::builtin(),
            limits,
            data_dir,
            home: dirs::home_dir(),
            store: None,
            contexts: ModelContexts::new(),
            scratch: None,
        }
    }

    /// Keeps `dir` (the core's data directory when there is no data root) for the core's
    /// lifetime.
    pub fn with_scratch(mut self, dir: tempfile::TempDir) -> Self {
        self.scratch = Some(dir);
        self
    }

    /// Saves sessions in `store`.
    /// The settings a session starts with: the mode and model asked for, else the configured
    /// defaults (the model: the configured default, else the first endpoint's, else the first
    /// of `choices`). Every front end, and a restored session missing either, starts here.
    pub fn default_settings(
        &self,
        mode: Option<Mode>,
        model: Option<ModelRef>,
        choices: &[ModelChoice],
    ) -> SessionSettings {
        SessionSettings {
            mode: mode.unwrap_or(self.config.default_mode),
            model: model.or_else(|| {
                self.catalog
                    .default_model(self.config.default_model.as_deref(), choices)
            }),
        }
    }

    pub fn with_store(mut self, store: Store) -> Self {
        self.store = Some(store);
        self
    }

    /// A new session in `cwd`, saved from its first prompt on.
    pub fn new_session(&self, cwd: PathBuf, settings: SessionSettings) -> Session {
        let id = SessionId::generate();
        let session = Session::new(id.clone(), cwd.clone(), settings.clone(), Vec::new());
        let Some(store) = &self.store else {
            return session;
        };
        match store.create(&id, &cwd) {
            Ok(writer) => {
                let persist = Persistence::new(writer, 1, AlwaysRules::default());
                persist.save_settings(&settings);
                session.persisted(persist)
            }
            Err(err) => {
                tracing::warn!(session = %id, "the session will not be saved: {err}");
                session
            }
        }
    }

    /// What the store holds of session `id` (the replay of a session open in this process).
    /// Damage in its file is logged; what can be read still loads.
    pub fn stored_snapshot(&self, id: &SessionId) -> Result<SessionSnapshot, StoreError> {
        let store = self
            .store
            .as_ref()
            .ok_or_else(|| StoreError::UnknownSession(id.clone()))?;
        let loaded = store.load(id)?;
        for warning in &loaded.warnings {
            tracing::warn!(file = %warning.file.display(), line = warning.line, "session file damaged: {}", warning.problem);
        }
        Ok(loaded.state())
    }

    /// Brings a stored session back: history, mode, model (when it still exists), "always"
    /// answers. The snapshot carries what a replay shows.
    pub fn restore_session(
        &self,
        id: &SessionId,
    ) -> Result<(Session, SessionSnapshot), StoreError> {
        let snapshot = self.stored_snapshot(id)?;
        let model = snapshot
            .model
            .clone()
            .filter(|m| self.catalog.endpoint(&m.endpoint).is_some());
        let settings = self.default_settings(snapshot.mode, model, &[]);
        let rules: AlwaysRules = snapshot.always_rules.clone().unwrap_or_default();
        let context = snapshot
            .summaries
            .last()
            .map(SessionContext::from_record)
            .unwrap_or_default();
        let mut session = Session::new(
            snapshot.id.clone(),
            snapshot.cwd.clone(),
            settings,
            snapshot.history.clone(),
        )
        .with_rules(rules.clone())
        .with_context(context);
        // A snapshot was read, so there is a store.
        match self.store.as_ref().map(|store| store.open_writer(id)) {
            Some(Ok(writer)) => {
                session = session.persisted(Persistence::new(writer, snapshot.next_round, rules))
            }
            // Another process is writing it: opening it here too would interleave rounds.
            Some(Err(err @ StoreError::Busy(_))) => return Err(err),
            Some(Err(err)) => tracing::warn!(session = %id, "the session will not be saved: {err}"),
            None => {}
        }
        Ok((session, snapshot))
    }

    /// Runs one prompt on `session` under `ticket` (from [`Session::begin_turn`]). Waits for a
    /// turn still running on the session to finish first. The turn ends when the caller drops
    /// the ticket.
    pub async fn run_prompt(
        &self,
        session: &Session,
        ticket: &TurnTicket,
        prompt: Vec<ContentPart>,
        client: &dyn ClientOps,
    ) -> Result<StopReason, TurnError> {
        let mut history = session.history().await;
        if ticket.cancel.is_cancelled() {
            Ok(StopReason::Cancelled)
        } else {
            let settings = session.settings();
            let cwd = session.cwd();
            let roots = self.roots(session, &cwd)?;
            let system_prompt = self.system_prompt(&cwd, settings.mode, roots.plan_dir().path());
            let live_mode = || session.settings().mode;
            let title = title_from_prompt(&prompt);
            let first = !history
                .iter()
                .any(|entry| matches!(entry, HistoryEntry::User { .. }));
            // The replay shows what the user wrote; the model sees it with what the assists add.
            let typed = prompt.clone();
            let prompt = self.with_context(prompt, first, &cwd, client).await;
            let ctx = TurnContext {
                catalog: &self.catalog,
                model: settings.model.as_ref(),
                system_prompt: &system_prompt,
                client,
                cancel: &ticket.cancel,
                settings: &self.config.agent,
                tools: self.tools_of(session),
                mode: settings.mode,
                cwd: &cwd,
                home: self.home.as_deref(),
                live_mode: &live_mode,
                roots: &roots,
                rules: session.rules(),
                limits: &self.limits,
                contexts: &self.contexts,
                context: session.context(),
            };
            match session.persistence() {
                None => run_turn(&ctx, &mut history, prompt).await,
                Some(persist) => {
                    let recorder = Recorder::new(client);
                    let ctx = TurnContext {
                        client: &recorder,
                        ..ctx
                    };
                    let before = history.len();
                    let context_before = lock(session.context()).to_record(0);
                    if persist.rounds() == 0
                        && before == 0
                        && let Some(title) = title
                    {
                        client.send(AgentEvent::SessionTitle { title });
                    }
                    let outcome = run_turn(&ctx, &mut history, prompt).await;
                    let rules = session
                        .rules()
                        .lock()
                        .map(|r| r.clone())
                        .unwrap_or_default();
                    persist
                        .save_round(typed, &recorder, &history[before..], &outcome, &rules)
                        .await;
                    let context_after = lock(session.context()).clone();
                    if context_after.to_record(0) != context_before {
                        persist.save_context(&context_after).await;
                    }
                    outcome
                }
            }
        }
    }

    /// The prompt with what the assists put before it: on a session's `first` prompt the
    /// project's layout (project_map), then the project files it names (attach_files), then the
    /// lines that hold its terms (lookup_terms).
    async fn with_context(
        &self,
        prompt: Vec<ContentPart>,
        first: bool,
        cwd: &Path,
        client: &dyn ClientOps,
    ) -> Vec<ContentPart> {
        let assists = &self.config.agent.assists;
        let mut parts = Vec::new();
        if first && assists.on(Assist::ProjectMap) {
            parts.extend(project_map(cwd).await);
        }
        if assists.on(Assist::AttachFiles) {
            parts.extend(attach_named_files(&prompt, cwd, client).await);
        }
        if assists.on(Assist::LookupTerms) {
            parts.extend(lookup_terms(&prompt, cwd).await);
        }
        if parts.is_empty() {
            return prompt;
        }
        parts.extend(prompt);
        parts
    }

    /// The session's model and its endpoint.
    pub(super) fn selected(&self, session: &Session) -> Result<(ModelRef, &Endpoint), TurnError> {
        let model = session.settings().model.ok_or(TurnError::NoModel)?;
        let endpoint = self
            .catalog
            .endpoint(&model.endpoint)
            .ok_or_else(|| TurnError::UnknownEndpoint(model.endpoint.clone()))?;
        Ok((model, endpoint))
    }

    /// The tools a session's model is offered: the built-ins, plus its MCP servers' tools.
    pub(super) fn tools_of<'a>(&'a self, session: &'a Session) -> &'a ToolRegistry {
        session.tools().map_or(&self.tools, |t| t.registry())
    }

    /// The system prompt the session's next request carries.
    pub(super) fn system_prompt_for(&self, session: &Session) -> Result<String, TurnError> {
        let cwd = session.cwd();
        let plan_dir = self.plan_dir(&cwd)?;
        Ok(self.system_prompt(&cwd, session.settings().mode, plan_dir.path()))
    }

    fn plan_dir(&self, cwd: &Path) -> Result<Resolved, TurnError> {
        resolve_root(&plan_dir(&self.data_dir, cwd))
    }

    /// The session's roots for this turn: its cwd, its plan directory, and the extra
    /// directories its client named.
    fn roots(&self, session: &Session, cwd: &Path) -> Result<Roots, TurnError> {
        let extra = session
            .extra_dirs()
            .iter()
            .map(|dir| resolve_root(dir))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Roots::new(resolve_root(cwd)?, self.plan_dir(cwd)?, extra))
    }

    fn system_prompt(&self, cwd: &Path, mode: Mode, plan_dir: &Path) -> String {
        let mut prompt = format!(
            "{}{SESSION_PART}The project is at {}; relative paths are resolved there.",
            SYSTEM_PROMPT.trim_end(),
            cwd.display()
        );
        if mode == Mode::Plan {
            prompt.push_str("\n\n");
            prompt.push_str(&plan_mode_prompt(plan_dir));
        }
        prompt
    }
}

fn resolve_root(dir: &Path) -> Result<Resolved, TurnError> {
    Resolved::from_absolute(dir).map_err(|source| TurnError::Roots {
        path: dir.to_path_buf(),
        source,
    })
}

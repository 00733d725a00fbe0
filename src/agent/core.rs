//! `AgentCore`: what every front end shares — the configuration, the model catalog, the tools —
//! and the one way to run a prompt on a session.

use std::path::{Path, PathBuf};

use hearth_backend::ContentPart;

use super::catalog::Catalog;
use super::client_ops::ClientOps;
use super::mode::Mode;
use super::paths::Resolved;
use super::policy::{plan_dir, plan_mode_prompt};
use super::session::{Session, TurnTicket};
use super::turn::{StopReason, TurnContext, TurnError, run_turn};
use crate::config::Config;
use crate::tools::{ToolLimits, ToolRegistry};

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
}

impl AgentCore {
    pub fn new(config: Config, catalog: Catalog, data_dir: PathBuf) -> Self {
        Self {
            config,
            catalog,
            tools: ToolRegistry::builtin(),
            limits: ToolLimits::default(),
            data_dir,
            home: dirs::home_dir(),
        }
    }

    /// Runs one prompt on `session` under `ticket` (from [`Session::begin_turn`]). Waits for a
    /// turn still running on the session to finish first, and always ends the ticket.
    pub async fn run_prompt(
        &self,
        session: &Session,
        ticket: &TurnTicket,
        prompt: Vec<ContentPart>,
        client: &dyn ClientOps,
    ) -> Result<StopReason, TurnError> {
        let mut history = session.history().await;
        let outcome = if ticket.cancel.is_cancelled() {
            Ok(StopReason::Cancelled)
        } else {
            let settings = session.settings();
            let plan_dir = self.plan_dir(&session.cwd)?;
            let system_prompt = self.system_prompt(session, settings.mode, plan_dir.path());
            let ctx = TurnContext {
                catalog: &self.catalog,
                model: settings.model.as_ref(),
                system_prompt: &system_prompt,
                client,
                cancel: &ticket.cancel,
                settings: &self.config.agent,
                tools: &self.tools,
                mode: settings.mode,
                cwd: &session.cwd,
                home: self.home.as_deref(),
                plan_dir: &plan_dir,
                rules: session.rules(),
                limits: &self.limits,
            };
            run_turn(&ctx, &mut history, prompt).await
        };
        drop(history);
        session.end_turn(ticket);
        outcome
    }

    fn plan_dir(&self, cwd: &Path) -> Result<Resolved, TurnError> {
        let dir = plan_dir(&self.data_dir, cwd);
        Resolved::from_absolute(&dir)
            .map_err(|e| TurnError::Aborted(format!("plan directory {}: {e}", dir.display())))
    }

    fn system_prompt(&self, session: &Session, mode: Mode, plan_dir: &Path) -> String {
        let mut prompt = SYSTEM_PROMPT.replace("{cwd}", &session.cwd.display().to_string());
        if mode == Mode::Plan {
            prompt.push_str("\n\n");
            prompt.push_str(&plan_mode_prompt(plan_dir));
        }
        prompt
    }
}

/// hearth's data directory: `$HEARTH_DATA_DIR`, else `<XDG data dir>/hearth`.
pub fn data_dir(env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    env("HEARTH_DATA_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| dirs::data_dir().map(|d| d.join("hearth")))
        .unwrap_or_else(|| std::env::temp_dir().join("hearth"))
}

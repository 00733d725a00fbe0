//! `AgentCore`: what every front end shares — the configuration, the model catalog — and the
//! one way to run a prompt on a session.

use hearth_backend::ContentPart;

use super::catalog::Catalog;
use super::client_ops::ClientOps;
use super::session::{Session, TurnTicket};
use super::turn::{StopReason, TurnContext, TurnError, run_turn};
use crate::config::Config;

const SYSTEM_PROMPT: &str = include_str!("../../prompts/system.md");

pub struct AgentCore {
    pub config: Config,
    pub catalog: Catalog,
}

impl AgentCore {
    pub fn new(config: Config, catalog: Catalog) -> Self {
        Self { config, catalog }
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
            let system_prompt = self.system_prompt(session);
            let ctx = TurnContext {
                catalog: &self.catalog,
                model: settings.model.as_ref(),
                system_prompt: &system_prompt,
                client,
                cancel: &ticket.cancel,
                settings: &self.config.agent,
            };
            run_turn(&ctx, &mut history, prompt).await
        };
        drop(history);
        session.end_turn(ticket);
        outcome
    }

    fn system_prompt(&self, session: &Session) -> String {
        SYSTEM_PROMPT.replace("{cwd}", &session.cwd.display().to_string())
    }
}

//! `session/prompt`: runs the turn in a task of its own and answers exactly once.

use std::sync::Arc;

use agent_client_protocol::v1::schema::{PromptRequest, PromptResponse};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error};

use super::client::AcpClientOps;
use super::content::prompt_parts;
use super::error::AcpError;
use super::handlers::stop_reason;
use super::state::AcpState;
use crate::agent::{StopReason, TurnContext, run_turn};

const SYSTEM_PROMPT: &str = include_str!("../../prompts/system.md");

pub fn start(
    state: Arc<AcpState>,
    req: PromptRequest,
    responder: Responder<PromptResponse>,
    cx: ConnectionTo<Client>,
) -> Result<(), Error> {
    let Some(session) = state.session(&req.session_id.0) else {
        return responder
            .respond_with_error(AcpError::UnknownSession(req.session_id.0.to_string()).into());
    };
    // Registering the turn cancels one still running on this session.
    let ticket = session.begin_turn();
    let task_cx = cx.clone();
    cx.spawn(async move {
        let mut history = session.history().await;
        let outcome = if ticket.cancel.is_cancelled() {
            Ok(StopReason::Cancelled)
        } else {
            let settings = session.settings();
            let client = AcpClientOps::new(
                task_cx,
                req.session_id.clone(),
                state.client_caps(),
                ticket.cancel.clone(),
            );
            let system_prompt = SYSTEM_PROMPT.replace("{cwd}", &session.cwd.display().to_string());
            let ctx = TurnContext {
                catalog: &state.catalog,
                model: settings.model.as_ref(),
                system_prompt: &system_prompt,
                client: &client,
                cancel: &ticket.cancel,
                settings: &state.config.agent,
            };
            run_turn(&ctx, &mut history, prompt_parts(req.prompt)).await
        };
        drop(history);
        session.end_turn(&ticket);
        match outcome {
            Ok(reason) => {
                tracing::info!(session = %session.id, ?reason, "turn ended");
                responder.respond(PromptResponse::new(stop_reason(reason)))
            }
            Err(err) => {
                tracing::error!(session = %session.id, "turn failed: {err}");
                responder.respond_with_error(AcpError::from(err).into())
            }
        }
    })
}

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
        let client = AcpClientOps::new(
            task_cx,
            req.session_id.clone(),
            state.client_caps(),
            ticket.cancel.clone(),
        );
        let outcome = state
            .core
            .run_prompt(&session, &ticket, prompt_parts(req.prompt), &client)
            .await;
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

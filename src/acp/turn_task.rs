//! `session/prompt`: runs the turn in a task of its own and answers exactly once.

use std::sync::Arc;

use agent_client_protocol::v1::schema::{PromptRequest, PromptResponse};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error};
use hearth_conversation::AgentEvent;

use agent_client_protocol::v1::schema::StopReason as AcpStopReason;
use hearth_backend::ContentPart;

use super::client::AcpClientOps;
use super::commands;
use super::content::prompt_parts;
use super::error::AcpError;
use super::render::stop_reason;
use super::state::AcpState;
use crate::host::ClientOps;
use crate::slash::parse_command;

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
    let task_cx_for_commands = cx.clone();
    cx.spawn(async move {
        let client = AcpClientOps::new(
            task_cx,
            req.session_id.clone(),
            state.client_caps(),
            ticket.cancel.clone(),
        );
        let prompt = prompt_parts(req.prompt);
        let command = match prompt.as_slice() {
            [ContentPart::Text { text }] => parse_command(text),
            _ => None,
        };
        let outcome = match command {
            Some(Ok(command)) => {
                let reason = commands::run(
                    &state,
                    &session,
                    &ticket,
                    command,
                    &client,
                    &task_cx_for_commands,
                )
                .await;
                drop(ticket);
                return responder.respond(PromptResponse::new(reason));
            }
            Some(Err(err)) => {
                drop(ticket);
                client.send(AgentEvent::AgentText {
                    text: format!("{err}; `/help` lists the commands."),
                });
                return responder.respond(PromptResponse::new(AcpStopReason::EndTurn));
            }
            None => {
                state
                    .core
                    .run_prompt(&session, &ticket, prompt, &client)
                    .await
            }
        };
        // The turn is over before the client hears so: a prompt sent right after the answer
        // must not find this one still registered.
        drop(ticket);
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

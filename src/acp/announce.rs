//! Session updates that tell a client what changed outside a turn's stream: the command list,
//! and the session's mode and options whenever they change, by any path (a picker, a request, a
//! slash command) and when a session opens, so that clients tracking a session from
//! notifications alone (acpx `status`) always know its mode.

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, ConfigOptionUpdate,
    CurrentModeUpdate, SessionId as AcpSessionId, SessionNotification, SessionUpdate,
    UnstructuredCommandInput,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error, JsonRpcResponse};
use hearth_conversation::SessionSettings;

use super::error::AcpError;
use super::options::options_for;
use super::state::AcpState;
use crate::slash::COMMANDS;

/// A request that changed a session's settings: its answer, and the settings before and after.
pub struct Changed<T> {
    pub response: T,
    pub session_id: AcpSessionId,
    pub before: SessionSettings,
    pub after: SessionSettings,
}

/// Sends one update; a client that left only costs a debug line.
pub fn notify(cx: &ConnectionTo<Client>, session_id: &AcpSessionId, update: SessionUpdate) {
    if let Err(err) = cx.send_notification(SessionNotification::new(session_id.clone(), update)) {
        tracing::debug!("dropping an update for a closed client: {}", err.message);
    }
}

/// What a client hears right after a session opens (new, load, resume): the commands, and the
/// mode it starts in.
pub fn opened(cx: &ConnectionTo<Client>, session_id: &AcpSessionId, settings: &SessionSettings) {
    notify(cx, session_id, available_commands());
    notify(
        cx,
        session_id,
        SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(settings.mode.id())),
    );
}

/// What changed between `before` and `after`: `current_mode_update` when the mode did, and
/// `config_option_update` (both pickers) when anything did.
pub fn settings_changed(
    cx: &ConnectionTo<Client>,
    state: &AcpState,
    session_id: &AcpSessionId,
    before: &SessionSettings,
    after: &SessionSettings,
) {
    if before.mode != after.mode {
        notify(
            cx,
            session_id,
            SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(after.mode.id())),
        );
    }
    if before != after {
        notify(
            cx,
            session_id,
            SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(options_for(state, after))),
        );
    }
}

/// Answers a settings request, then announces what it changed.
pub fn respond_then_announce<T: JsonRpcResponse>(
    responder: Responder<T>,
    outcome: Result<Changed<T>, AcpError>,
    state: &AcpState,
    cx: &ConnectionTo<Client>,
) -> Result<(), Error> {
    match outcome {
        Ok(changed) => {
            responder.respond(changed.response)?;
            settings_changed(
                cx,
                state,
                &changed.session_id,
                &changed.before,
                &changed.after,
            );
            Ok(())
        }
        Err(err) => responder.respond_with_error(err.into()),
    }
}

/// The `available_commands_update` for every session.
fn available_commands() -> SessionUpdate {
    let commands = COMMANDS
        .iter()
        .map(|c| {
            let command = AvailableCommand::new(c.name, c.description);
            match c.hint {
                Some(hint) => command.input(AvailableCommandInput::Unstructured(
                    UnstructuredCommandInput::new(hint),
                )),
                None => command,
            }
        })
        .collect();
    SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands))
}

//! Slash commands over ACP: advertised with `available_commands_update` once a session is
//! open, and answered in place of a model turn when a prompt is one.

use std::sync::Arc;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, ConfigOptionUpdate,
    CurrentModeUpdate, SessionId as AcpSessionId, SessionNotification, SessionUpdate,
    StopReason as AcpStopReason, UnstructuredCommandInput,
};
use hearth_conversation::{AgentEvent, Mode};

use super::client::AcpClientOps;
use super::options::options_for;
use super::state::AcpState;
use crate::agent::{CompactError, ContextCommandError, Session, TurnTicket};
use crate::host::ClientOps;
use crate::slash::{COMMANDS, SlashCommand, help_text};

/// The `available_commands_update` for every session.
pub fn available_commands() -> SessionUpdate {
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

/// Sends the command list for `session_id`.
pub fn announce(cx: &ConnectionTo<Client>, session_id: &str) {
    notify(cx, &AcpSessionId::new(session_id), available_commands());
}

fn notify(cx: &ConnectionTo<Client>, session_id: &AcpSessionId, update: SessionUpdate) {
    if let Err(err) = cx.send_notification(SessionNotification::new(session_id.clone(), update)) {
        tracing::debug!("dropping an update for a closed client: {}", err.message);
    }
}

/// Runs `command` on `session` as its turn; the answer is Markdown in the agent's message.
pub async fn run(
    state: &Arc<AcpState>,
    session: &Session,
    ticket: &TurnTicket,
    command: SlashCommand,
    client: &AcpClientOps,
    cx: &ConnectionTo<Client>,
) -> AcpStopReason {
    let sid = AcpSessionId::new(session.id.to_string());
    let say = |text: String| client.send(AgentEvent::AgentText { text });
    match command {
        SlashCommand::Compact { focus } => {
            let result = state
                .core
                .compact(session, ticket, focus.as_deref(), client)
                .await;
            return match result {
                Ok(done) => {
                    say(format!(
                        "Compacted: a {}-token summary now stands in for the first {} messages. \
                         The next request carries {} tokens instead of {}.",
                        done.summary_tokens, done.covers, done.after, done.before
                    ));
                    AcpStopReason::EndTurn
                }
                Err(ContextCommandError::Compact(CompactError::Cancelled)) => {
                    AcpStopReason::Cancelled
                }
                Err(err) => {
                    say(format!("Not compacted: {err}."));
                    AcpStopReason::EndTurn
                }
            };
        }
        SlashCommand::Clear => {
            state.core.clear_context(session).await;
            say(
                "Context cleared: the model starts afresh. The conversation stays in this \
                 session's history."
                    .into(),
            );
            if let Ok(report) = state.core.context_report(session).await {
                client.send(AgentEvent::Usage {
                    used: report.used as u64,
                    size: u64::from(report.window),
                });
            }
        }
        SlashCommand::Context => match state.core.context_report(session).await {
            Ok(report) => say(format!("```\n{report}```")),
            Err(err) => say(format!("No context yet: {err}.")),
        },
        SlashCommand::Mode(None) => {
            let current = session.settings().mode;
            let lines: String = Mode::ALL
                .iter()
                .map(|m| {
                    let mark = if *m == current { " (current)" } else { "" };
                    format!("- `{}`{mark} — {}\n", m.id(), m.description())
                })
                .collect();
            say(lines);
        }
        SlashCommand::Mode(Some(id)) => match Mode::from_id(&id) {
            Some(mode) => {
                let settings = session.update_settings(|s| s.mode = mode);
                notify(
                    cx,
                    &sid,
                    SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(mode.id())),
                );
                notify(
                    cx,
                    &sid,
                    SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(options_for(
                        state, &settings,
                    ))),
                );
                say(format!("Mode: `{}` — {}", mode.id(), mode.description()));
            }
            None => say(format!(
                "Unknown mode `{id}`; the modes are: {}.",
                Mode::ALL.map(|m| m.id()).join(", ")
            )),
        },
        SlashCommand::Model(None) => {
            let current = session.settings().model;
            let lines: String = state
                .choices()
                .iter()
                .map(|c| {
                    let mark = if current.as_ref() == Some(&c.model) {
                        " (current)"
                    } else {
                        ""
                    };
                    format!("- `{}`{mark}\n", c.value_id)
                })
                .collect();
            say(if lines.is_empty() {
                "No models are offered: configure an endpoint.".into()
            } else {
                lines
            });
        }
        SlashCommand::Model(Some(id)) => {
            match state.choices().into_iter().find(|c| c.value_id == id) {
                Some(choice) => {
                    let settings = session.update_settings(|s| s.model = Some(choice.model));
                    notify(
                        cx,
                        &sid,
                        SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(options_for(
                            state, &settings,
                        ))),
                    );
                    say(format!("Model: `{id}`"));
                }
                None => say(format!("Model `{id}` is not offered; `/model` lists them.")),
            }
        }
        SlashCommand::Help => say(help_text()),
    }
    AcpStopReason::EndTurn
}

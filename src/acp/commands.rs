//! Slash commands over ACP, answered in place of a model turn when a prompt is one (they are
//! advertised by [`super::announce`] once a session is open).

use std::sync::Arc;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{SessionId as AcpSessionId, StopReason as AcpStopReason};
use hearth_conversation::{AgentEvent, Mode};

use super::announce;
use super::client::AcpClientOps;
use super::state::AcpState;
use crate::agent::{CompactError, ContextCommandError, Session, TurnTicket};
use crate::host::ClientOps;
use crate::slash::{SlashCommand, help_text};

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
                let before = session.settings();
                let after = session.update_settings(|s| s.mode = mode);
                announce::settings_changed(cx, state, &sid, &before, &after);
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
                    let before = session.settings();
                    let after = session.update_settings(|s| s.model = Some(choice.model));
                    announce::settings_changed(cx, state, &sid, &before, &after);
                    say(format!("Model: `{id}`"));
                }
                None => say(format!("Model `{id}` is not offered; `/model` lists them.")),
            }
        }
        SlashCommand::Help => say(help_text()),
    }
    AcpStopReason::EndTurn
}

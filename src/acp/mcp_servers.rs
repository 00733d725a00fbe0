//! The MCP servers a client passes in `session/new`, `session/load` and `session/resume`:
//! ACP's shapes to hearth's, starting them for a session, and telling the user (once, after
//! the answer, so the client knows the session) about those that could not start.

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{McpServer, SessionId, SessionNotification};
use agent_client_protocol::{Client, Error, JsonRpcResponse};
use hearth_conversation::{AgentEvent, SessionSettings};

use super::render;
use super::state::AcpState;
use crate::agent::Session;
use crate::mcp::{McpServerConfig, start_session_tools};

/// An answer to a session request, with the notices to send once it is out.
pub struct Opened<T> {
    pub response: T,
    pub session_id: SessionId,
    /// The settings the session opened with, announced after the response.
    pub settings: SessionSettings,
    /// One line per MCP server that could not be started.
    pub notices: Vec<String>,
}

/// ACP's server descriptions as hearth's.
pub fn configs(servers: Vec<McpServer>) -> Vec<McpServerConfig> {
    servers
        .into_iter()
        .map(|server| match server {
            McpServer::Stdio(s) => McpServerConfig::Stdio {
                name: s.name,
                command: s.command,
                args: s.args,
                env: s.env.into_iter().map(|e| (e.name, e.value)).collect(),
            },
            McpServer::Http(h) => McpServerConfig::Http {
                name: h.name,
                url: h.url,
                headers: h.headers.into_iter().map(|h| (h.name, h.value)).collect(),
            },
            McpServer::Sse(s) => McpServerConfig::Unsupported {
                name: s.name,
                transport: "SSE",
            },
            other => McpServerConfig::Unsupported {
                name: format!("{other:?}").chars().take(40).collect(),
                transport: "unknown",
            },
        })
        .collect()
}

/// Starts `servers` for `session` (bounded in time, never failing) and returns the session
/// with its own tools, plus a notice for each server that could not start.
pub async fn attach(
    state: &AcpState,
    session: Session,
    servers: Vec<McpServer>,
) -> (Session, Vec<String>) {
    if servers.is_empty() {
        return (session, Vec::new());
    }
    let configs = configs(servers);
    let (tools, failures) = start_session_tools(&state.core.tools, &configs, &session.cwd()).await;
    let notices = failures.iter().map(ToString::to_string).collect();
    (session.with_tools(tools), notices)
}

/// Answers the request, then sends the notices as session updates. A notice that cannot be
/// sent (the client left) is only logged: the answer already went out.
pub fn respond_then_report<T: JsonRpcResponse>(
    responder: Responder<T>,
    outcome: Result<Opened<T>, super::error::AcpError>,
    cx: &ConnectionTo<Client>,
) -> Result<(), Error> {
    let opened = match outcome {
        Ok(opened) => opened,
        Err(err) => return responder.respond_with_error(err.into()),
    };
    responder.respond(opened.response)?;
    // After the response, so the client knows the session these updates are for.
    super::announce::opened(cx, &opened.session_id, &opened.settings);
    for text in opened.notices {
        for update in render::session_update(AgentEvent::Notice { text }) {
            let note = SessionNotification::new(opened.session_id.clone(), update);
            if let Err(err) = cx.send_notification(note) {
                tracing::warn!("cannot send an MCP notice: {}", err.message);
            }
        }
    }
    Ok(())
}

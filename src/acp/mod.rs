//! The ACP front end: what Zed (or any ACP client) talks to over stdio.

mod client;
mod commands;
mod content;
mod error;
mod handlers;
mod history_ops;
mod mcp_servers;
mod options;
mod render;
mod session_ops;
mod state;
mod turn_task;

pub use handlers::agent;
pub use state::AcpState;

use std::sync::Arc;

use agent_client_protocol::Stdio;

/// Serves ACP on stdin/stdout until the client closes stdin, then stops every session's MCP
/// servers (so none outlives hearth).
pub async fn serve_stdio(state: Arc<AcpState>) -> Result<(), agent_client_protocol::Error> {
    let served = agent(state.clone()).connect_to(Stdio::new()).await;
    state.close_all().await;
    served
}

//! The ACP front end: what Zed (or any ACP client) talks to over stdio.

mod announce;
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
mod stdio;
mod turn_task;

pub use handlers::agent;
pub use state::AcpState;

use std::sync::Arc;

/// Serves ACP on stdin/stdout until the client closes stdin, then stops every session's MCP
/// servers (so none outlives hearth).
pub async fn serve_stdio(state: Arc<AcpState>) -> Result<(), agent_client_protocol::Error> {
    let served = agent(state.clone()).connect_to(stdio::transport()).await;
    state.close_all().await;
    match served {
        Err(err) if client_hung_up(&err) => {
            // An update written just as the client went away (e.g. the command list after
            // session/new) finds stdout closed: that is the client leaving, not a failure.
            tracing::debug!("stdout closed under a write: {}", describe_error(&err));
            Ok(())
        }
        other => other,
    }
}

/// Whether `err` is the transport finding the client's end of stdout closed.
fn client_hung_up(err: &agent_client_protocol::Error) -> bool {
    let data = error_data(err).to_lowercase();
    data.contains("broken pipe") || data.contains("os error 32")
}

/// The error's message with its data, where the SDK puts the underlying I/O error.
pub fn describe_error(err: &agent_client_protocol::Error) -> String {
    match error_data(err) {
        data if data.is_empty() => err.message.clone(),
        data => format!("{}: {data}", err.message),
    }
}

fn error_data(err: &agent_client_protocol::Error) -> String {
    match &err.data {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use agent_client_protocol::Error;

    use super::{client_hung_up, describe_error};

    #[test]
    fn only_a_closed_stdout_counts_as_the_client_leaving() {
        let epipe = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert!(client_hung_up(&Error::into_internal_error(epipe)));
        assert!(!client_hung_up(&Error::internal_error().data("disk full")));
        assert!(!client_hung_up(&Error::internal_error()));
    }

    #[test]
    fn errors_are_described_with_their_data_when_they_have_some() {
        assert_eq!(describe_error(&Error::internal_error()), "Internal error");
        assert_eq!(
            describe_error(&Error::internal_error().data("disk full")),
            "Internal error: disk full"
        );
    }
}

//! [`SessionTools`]: a session's tool set (the built-ins plus its MCP servers' tools) and the
//! connections behind them, started together and stopped together.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::join_all;

use super::config::McpServerConfig;
use super::connect::{Service, connect, kill_group};
use super::error::McpError;
use super::names::ToolNamer;
use super::tool::McpTool;
use crate::sync::lock;
use crate::tools::ToolRegistry;

/// How long one server may take to start and list its tools.
pub const START_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a server gets to exit on its own at shutdown before it is killed: short, because
/// clients give hearth itself only a moment after closing its stdin (the ACP SDK: 1 s).
const STOP_TIMEOUT: Duration = Duration::from_millis(500);

/// A server that could not be used; the session goes on without it.
#[derive(Debug)]
pub struct StartFailure {
    /// The server's name, as the client gave it.
    pub server: String,
    pub error: McpError,
}

impl std::fmt::Display for StartFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "MCP server `{}` is not available: {}. The session goes on without its tools.",
            self.server, self.error
        )
    }
}

/// A session's tools and the MCP servers it owns. Dropping it stops every server (stdio
/// servers are killed, with their process groups); [`SessionTools::shutdown`] stops them
/// gracefully first.
pub struct SessionTools {
    registry: ToolRegistry,
    services: Mutex<Vec<Running>>,
}

/// One started server.
struct Running {
    name: String,
    service: Service,
    process_group: Option<u32>,
}

impl SessionTools {
    /// The tools the model is offered in this session.
    pub fn registry(&self) -> &ToolRegistry {
        &self.registry
    }

    /// The names of the servers that are running, in start order.
    pub fn servers(&self) -> Vec<String> {
        lock(&self.services)
            .iter()
            .map(|r| r.name.clone())
            .collect()
    }

    /// Closes every connection (a stdio server gets its stdin closed, a little time to exit,
    /// and then its process group is killed, so nothing it started stays behind). Their tools
    /// fail from then on.
    pub async fn shutdown(&self) {
        let services = std::mem::take(&mut *lock(&self.services));
        join_all(services.into_iter().map(|mut running| async move {
            if let Ok(None) = running.service.close_with_timeout(STOP_TIMEOUT).await {
                tracing::warn!(server = %running.name, "MCP server did not stop in time; killing it");
            }
            drop(running.service);
            if let Some(pgid) = running.process_group {
                kill_group(pgid);
            }
        }))
        .await;
    }
}

/// Starts `servers` concurrently (each bounded by [`START_TIMEOUT`]) and returns the session's
/// tools: `base` plus every tool of every server that started, named `server__tool`. Never
/// fails: each server that could not be used is returned as a [`StartFailure`] (and logged).
pub async fn start_session_tools(
    base: &ToolRegistry,
    servers: &[McpServerConfig],
    cwd: &Path,
) -> (SessionTools, Vec<StartFailure>) {
    let started = join_all(servers.iter().map(|config| async move {
        let outcome = tokio::time::timeout(START_TIMEOUT, connect(config, cwd))
            .await
            .unwrap_or(Err(McpError::Timeout(START_TIMEOUT.as_secs())));
        (config.name().to_owned(), outcome)
    }))
    .await;
    let mut registry = base.clone();
    let mut namer = ToolNamer::new(base.iter().map(|t| t.name()));
    let mut services = Vec::new();
    let mut failures = Vec::new();
    for (server, outcome) in started {
        match outcome {
            Ok(connected) => {
                for tool in &connected.tools {
                    let name = namer.name(&server, &tool.name);
                    let handler =
                        McpTool::new(name, &server, tool, connected.service.peer().clone());
                    // The namer only hands out names no tool has, so this cannot collide.
                    if let Err(err) = registry.register(Arc::new(handler)) {
                        tracing::warn!(server = %server, "{err}");
                    }
                }
                tracing::info!(server = %server, tools = connected.tools.len(), "MCP server started");
                services.push(Running {
                    name: server,
                    service: connected.service,
                    process_group: connected.process_group,
                });
            }
            Err(error) => {
                let failure = StartFailure { server, error };
                tracing::warn!("{failure}");
                failures.push(failure);
            }
        }
    }
    let tools = SessionTools {
        registry,
        services: Mutex::new(services),
    };
    (tools, failures)
}

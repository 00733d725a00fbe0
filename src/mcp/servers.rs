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
    start_within(base, servers, cwd, START_TIMEOUT).await
}

async fn start_within(
    base: &ToolRegistry,
    servers: &[McpServerConfig],
    cwd: &Path,
    limit: Duration,
) -> (SessionTools, Vec<StartFailure>) {
    let started = join_all(servers.iter().map(|config| async move {
        let outcome = tokio::time::timeout(limit, connect(config, cwd))
            .await
            .unwrap_or(Err(McpError::Timeout(limit.as_secs_f64())));
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

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    fn stdio(name: &str, command: &str, args: &[&str]) -> McpServerConfig {
        McpServerConfig::Stdio {
            name: name.into(),
            command: command.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: Vec::new(),
        }
    }

    fn alive(pid: &str) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            !stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
    }

    #[tokio::test]
    async fn servers_that_cannot_start_are_reported_and_a_mute_one_is_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let missing = dir.path().join("missing");
        let script = format!("echo $$ > {}; exec sleep 30", pid_file.display());
        let servers = vec![
            stdio("ghost", &missing.display().to_string(), &[]),
            // Starts, but never answers the handshake.
            stdio("mute", "sh", &["-c", &script]),
            McpServerConfig::Unsupported {
                name: "old".into(),
                transport: "SSE",
            },
            McpServerConfig::Http {
                name: "web".into(),
                url: "http://127.0.0.1:9/mcp".into(),
                headers: vec![("bad header".into(), "x".into())],
            },
        ];
        let base = ToolRegistry::builtin();
        let started = Instant::now();
        let (tools, failures) =
            start_within(&base, &servers, dir.path(), Duration::from_millis(700)).await;
        // Concurrent and bounded: four failures in about one timeout, not four.
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        let names: Vec<&str> = tools.registry().iter().map(|t| t.name()).collect();
        let builtin: Vec<&str> = base.iter().map(|t| t.name()).collect();
        assert_eq!(names, builtin);
        assert!(tools.servers().is_empty());

        let by_server: Vec<(&str, &McpError)> = failures
            .iter()
            .map(|f| (f.server.as_str(), &f.error))
            .collect();
        assert!(
            matches!(by_server[0], ("ghost", McpError::Spawn { .. })),
            "{failures:?}"
        );
        assert!(
            matches!(by_server[1], ("mute", McpError::Timeout(_))),
            "{failures:?}"
        );
        assert!(
            matches!(by_server[2], ("old", McpError::Unsupported("SSE"))),
            "{failures:?}"
        );
        assert!(
            matches!(by_server[3], ("web", McpError::Config(_))),
            "{failures:?}"
        );
        let notice = failures[0].to_string();
        assert!(
            notice.starts_with("MCP server `ghost` is not available: cannot start `"),
            "{notice}"
        );
        assert!(notice.contains(&missing.display().to_string()), "{notice}");
        assert_eq!(
            failures[1].to_string(),
            "MCP server `mute` is not available: it did not start within 0.7 s. The session goes \
             on without its tools."
        );

        // The server that timed out is killed, not left running.
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        let pid = pid.trim();
        let mut gone = false;
        for _ in 0..500 {
            if !alive(pid) {
                gone = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(gone, "the mute server {pid} still runs");
    }
}

//! Starting one MCP server: spawn or reach it, do the MCP handshake, list its tools.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;

use http::{HeaderName, HeaderValue};
use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, Tool};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};

use super::config::McpServerConfig;
use super::error::McpError;

/// A connected client session with one server. Dropping it stops the server: the session is
/// cancelled, and a stdio server's whole process group is killed.
pub type Service = RunningService<RoleClient, ClientConfig>;

/// What hearth tells servers about itself: its name and version, and no client features
/// (no sampling, roots or elicitation).
fn client() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("hearth", env!("CARGO_PKG_VERSION")),
    )
}

/// A server that started, with the tools it offers.
pub struct Connected {
    pub service: Service,
    pub tools: Vec<Tool>,
    /// A stdio server's process group (its pid: it leads the group).
    pub process_group: Option<u32>,
}

/// Starts `config` (a stdio server runs in `cwd`) and lists its tools. Not bounded in time:
/// the caller puts a timeout around it.
pub async fn connect(config: &McpServerConfig, cwd: &Path) -> Result<Connected, McpError> {
    let mut process_group = None;
    let service = match config {
        McpServerConfig::Stdio {
            command, args, env, ..
        } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args)
                .envs(env.iter().map(|(k, v)| (k, v)))
                .current_dir(cwd);
            crate::host::die_with_parent(&mut cmd);
            let mut wrapped = CommandWrap::from(cmd);
            // Its own process group, so stopping the server also stops whatever it started
            // (servers launched through `npx` or a shell are several processes).
            wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
            let (transport, _) = TokioChildProcess::builder(wrapped)
                .stderr(Stdio::inherit())
                .spawn()
                .map_err(|source| McpError::Spawn {
                    command: command.display().to_string(),
                    source,
                })?;
            process_group = transport.id();
            client()
                .serve(transport)
                .await
                .map_err(|e| McpError::Handshake(e.to_string()))?
        }
        McpServerConfig::Http { url, headers, .. } => {
            install_crypto_provider();
            let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                .custom_headers(header_map(headers)?);
            let transport = StreamableHttpClientTransport::from_config(config);
            client()
                .serve(transport)
                .await
                .map_err(|e| McpError::Handshake(e.to_string()))?
        }
        McpServerConfig::Unsupported { transport, .. } => {
            return Err(McpError::Unsupported(transport));
        }
    };
    let tools = service
        .list_all_tools()
        .await
        .map_err(|e| McpError::ListTools(e.to_string()))?;
    Ok(Connected {
        service,
        tools,
        process_group,
    })
}

/// SIGKILLs what is left of a stopped stdio server's process group: a server that exits when
/// its stdin closes may leave children behind (a wrapper's real server, helpers).
pub fn kill_group(pgid: u32) {
    let Ok(pgid) = i32::try_from(pgid) else {
        return;
    };
    if pgid <= 1 {
        return;
    }
    // SAFETY: kill(2) takes plain integers and touches no memory of ours; a negative pid
    // addresses the process group the server led (it was started as a group leader).
    let rc = unsafe { libc::kill(-pgid, libc::SIGKILL) };
    if rc != 0 {
        tracing::trace!(
            pgid,
            "kill of MCP process group: {}",
            std::io::Error::last_os_error()
        );
    }
}

fn header_map(headers: &[(String, String)]) -> Result<HashMap<HeaderName, HeaderValue>, McpError> {
    headers
        .iter()
        .map(|(name, value)| {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| McpError::Config(format!("header name `{name}`: {e}")))?;
            let value = HeaderValue::from_str(value)
                .map_err(|e| McpError::Config(format!("value of header `{name}`: {e}")))?;
            Ok((name, value))
        })
        .collect()
}

/// rmcp's HTTP client uses rustls without a built-in crypto provider (the default one needs a
/// C toolchain to build); hearth already ships `ring`. rustls takes its provider from a
/// process-wide default that can be set once: the first call sets it, later calls (and a
/// provider someone else installed) leave it as it is.
fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

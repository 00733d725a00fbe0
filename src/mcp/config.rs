//! [`McpServerConfig`]: an MCP server to start, as hearth knows it (front ends convert their
//! own shapes, e.g. ACP's `McpServer`, into this).

use std::path::PathBuf;

/// One MCP server a session should use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpServerConfig {
    /// A local process speaking MCP on stdin/stdout.
    Stdio {
        name: String,
        command: PathBuf,
        args: Vec<String>,
        /// Added to hearth's own environment.
        env: Vec<(String, String)>,
    },
    /// A streamable-HTTP server.
    Http {
        name: String,
        url: String,
        /// Sent with every request (e.g. `Authorization`).
        headers: Vec<(String, String)>,
    },
    /// A transport hearth does not speak (legacy SSE): reported, never started.
    Unsupported {
        name: String,
        transport: &'static str,
    },
}

impl McpServerConfig {
    /// The server's name as the client gave it.
    pub fn name(&self) -> &str {
        match self {
            McpServerConfig::Stdio { name, .. }
            | McpServerConfig::Http { name, .. }
            | McpServerConfig::Unsupported { name, .. } => name,
        }
    }
}

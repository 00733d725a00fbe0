//! What can go wrong with an MCP server.

/// Why an MCP server could not be used.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The transport is not one hearth speaks (legacy SSE): the server is skipped and the
    /// user told once.
    #[error("the {0} transport is not supported; use stdio or streamable HTTP")]
    Unsupported(&'static str),
    /// The command could not be started (not found, not executable): the server is skipped
    /// and the user told once.
    #[error("cannot start `{command}`: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    /// A header or URL the client passed is malformed: the server is skipped and the user
    /// told once.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The MCP handshake failed (the process exited, spoke something else, the HTTP server
    /// refused): the server is skipped and the user told once.
    #[error("handshake failed: {0}")]
    Handshake(String),
    /// Listing the server's tools failed: the server is stopped, skipped and the user told once.
    #[error("listing its tools failed: {0}")]
    ListTools(String),
    /// Start-up took longer than [`super::START_TIMEOUT`]: the server is stopped, skipped and
    /// the user told once.
    #[error("it did not start within {0} s")]
    Timeout(f64),
}

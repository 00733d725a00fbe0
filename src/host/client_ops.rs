//! `ClientOps`: what the agent asks of whoever hosts it. Over ACP the editor does these things
//! (Zed's buffers, Zed's terminals, Zed's permission buttons); in the REPL and batch front ends
//! hearth does them itself. Tests use a fake.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use hearth_conversation::{AgentEvent, PermissionAnswer, Reach, TerminalId, ToolCard};

/// Why a client operation failed. Tools turn these into messages for the model.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClientOpsError {
    /// The file does not exist (or the editor says it is outside the project).
    #[error("not found: {0}")]
    NotFound(PathBuf),
    /// The operation was refused or failed for the given reason.
    #[error("{0}")]
    Failed(String),
    /// The host cannot do this (capability not advertised and no local fallback).
    #[error("not supported by this client: {0}")]
    Unsupported(&'static str),
    /// The connection to the client is gone.
    #[error("the client disconnected")]
    Disconnected,
}

/// A command to run in a terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalRequest {
    /// Run through `sh -c` (or the user's shell in the editor).
    pub command: String,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    /// Keep at most this many bytes of output (the tail is kept).
    pub output_byte_limit: u64,
}

/// How a terminal's process ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExitStatus {
    pub exit_code: Option<u32>,
    pub signal: Option<String>,
}

/// A terminal's output so far.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TerminalOutput {
    pub output: String,
    /// Output was cut to the byte limit.
    pub truncated: bool,
    /// Set once the process has exited.
    pub exit_status: Option<ExitStatus>,
}

#[async_trait]
pub trait ClientOps: Send + Sync {
    /// Reads a text file (the editor's buffer where there is one). `line` is 1-based.
    async fn read_text_file(
        &self,
        path: &Path,
        line: Option<u32>,
        limit: Option<u32>,
    ) -> Result<String, ClientOpsError>;

    /// Writes a whole text file (through the editor, so it records the edit for review).
    async fn write_text_file(&self, path: &Path, content: &str) -> Result<(), ClientOpsError>;

    async fn create_terminal(&self, request: TerminalRequest)
    -> Result<TerminalId, ClientOpsError>;
    async fn terminal_output(&self, id: &TerminalId) -> Result<TerminalOutput, ClientOpsError>;
    async fn wait_for_exit(&self, id: &TerminalId) -> Result<ExitStatus, ClientOpsError>;
    async fn kill_terminal(&self, id: &TerminalId) -> Result<(), ClientOpsError>;
    /// Frees the terminal; its id is invalid afterwards. Always called, also after a kill.
    async fn release_terminal(&self, id: &TerminalId) -> Result<(), ClientOpsError>;

    /// Asks the user whether `card` may run. Resolves to `Cancelled` if the turn is cancelled.
    async fn request_permission(&self, card: &ToolCard, reach: Reach) -> PermissionAnswer;

    /// Shows an event to the user. Never blocks; a closed client drops it.
    fn send(&self, event: AgentEvent);
}

//! The [`ToolHandler`] seam: what every tool (built-in, and later MCP) offers the turn loop.
//!
//! A call goes through two steps. [`ToolHandler::prepare`] validates the arguments, resolves
//! paths and computes what the call will do (the card's title, locations, an edit's diff) with
//! no side effects; the turn loop shows the card and asks the policy with
//! [`Prepared::subject`]. [`ToolHandler::run`] then does the work on exactly the paths that
//! were judged.

use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use hearth_backend::ToolSpec;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use hearth_conversation::{
    Access, ToolCallId, ToolCard, ToolCardUpdate, ToolContent, ToolKind, ToolLocation, ToolStatus,
};

use crate::host::{ClientOps, ClientOpsError};

use super::invocation::CommandShape;
use super::paths::{self, Resolved};
use super::policy::Subject;

/// Why a tool call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// Bad arguments, a missing or binary file, an edit that does not match, a refused write:
    /// the turn loop sends the text to the model as the call's (error) result, marks the card
    /// failed, and the turn goes on.
    #[error("{0}")]
    Model(String),
    /// The host is gone (the client disconnected): the turn loop aborts the turn.
    #[error("aborting the turn: {0}")]
    Abort(String),
    /// The turn was cancelled while the tool ran; whatever it started has been stopped and
    /// released. The turn loop ends the turn as cancelled.
    #[error("cancelled")]
    Cancelled,
}

impl ToolError {
    /// Maps a client failure: a lost client aborts, anything else is told to the model.
    pub fn from_client(err: ClientOpsError) -> Self {
        match err {
            ClientOpsError::Disconnected => ToolError::Abort(err.to_string()),
            ClientOpsError::NotFound(path) => {
                ToolError::Model(format!("file not found: {}", path.display()))
            }
            other => ToolError::Model(other.to_string()),
        }
    }
}

/// Limits every tool obeys (from the config; [`Default`] gives sensible values).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolLimits {
    /// `bash` timeout when the model gives none.
    pub bash_timeout_secs: u64,
    /// The longest `bash` timeout a model may ask for.
    pub bash_max_timeout_secs: u64,
    /// Cap on a command's output, in bytes (the tail is kept); also caps list/glob/grep output.
    pub output_bytes: usize,
    /// Lines `read_file` returns when the model gives no limit.
    pub read_lines: usize,
    /// Cap on what one `read_file` returns, in bytes.
    pub read_bytes: usize,
    /// Longer lines are cut in `read_file` and `grep` output.
    pub line_chars: usize,
    /// Most matches `grep` reports, and most paths `glob`/`list_dir` list.
    pub max_results: usize,
    /// How long one MCP tool call may take (`[agent] mcp_call_timeout_secs`).
    pub mcp_call_timeout_secs: u64,
}

/// An MCP server that takes longer than this over one call is treated as hung.
pub const DEFAULT_MCP_CALL_TIMEOUT_SECS: u64 = 300;

impl Default for ToolLimits {
    fn default() -> Self {
        Self {
            bash_timeout_secs: 120,
            bash_max_timeout_secs: 600,
            output_bytes: 32 * 1024,
            read_lines: 2000,
            read_bytes: 64 * 1024,
            line_chars: 2000,
            max_results: 500,
            mcp_call_timeout_secs: DEFAULT_MCP_CALL_TIMEOUT_SECS,
        }
    }
}

impl ToolLimits {
    pub fn mcp_call_timeout(&self) -> Duration {
        Duration::from_secs(self.mcp_call_timeout_secs.max(1))
    }

    pub fn bash_timeout(&self, requested_secs: Option<u64>) -> Duration {
        let secs = requested_secs
            .unwrap_or(self.bash_timeout_secs)
            .clamp(1, self.bash_max_timeout_secs.max(1));
        Duration::from_secs(secs)
    }
}

/// What a tool may use while it runs.
#[derive(Clone, Copy)]
pub struct ToolContext<'a> {
    /// The session's working directory (absolute); relative paths start here.
    pub cwd: &'a Path,
    /// The user's home directory, for `~` and `$HOME`.
    pub home: Option<&'a Path>,
    /// Files and terminals go through the client, so the editor sees them.
    pub client: &'a dyn ClientOps,
    pub call_id: &'a ToolCallId,
    /// Cancelled when the turn is; long tools stop and clean up.
    pub cancel: &'a CancellationToken,
    pub limits: &'a ToolLimits,
}

impl ToolContext<'_> {
    /// Resolves a path the model gave (see [`paths::resolve`]).
    pub fn resolve(&self, raw: &str) -> Result<Resolved, ToolError> {
        paths::resolve(raw, self.cwd, self.home).map_err(|e| ToolError::Model(e.to_string()))
    }
}

/// What a call will do, computed before it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    /// A short title for the card (Markdown).
    pub title: String,
    pub kind: ToolKind,
    /// Files the editor should follow.
    pub locations: Vec<ToolLocation>,
    pub access: Access,
    /// Every path the call touches, resolved; the policy judges these and `run` uses them.
    pub paths: Vec<Resolved>,
    /// For shell commands: what the line runs (see [`Subject::command`]).
    pub command: Option<CommandShape>,
    /// What the permission prompt shows, e.g. the diff an edit will make.
    pub preview: Vec<ToolContent>,
}

impl Prepared {
    /// The card shown when the call starts (status pending; the preview as content, so a
    /// permission prompt shows the diff).
    pub fn card(&self, id: ToolCallId, raw_input: serde_json::Value) -> ToolCard {
        ToolCard {
            id,
            title: self.title.clone(),
            kind: self.kind,
            status: ToolStatus::Pending,
            locations: self.locations.clone(),
            content: self.preview.clone(),
            raw_input,
        }
    }

    /// The call as the policy sees it.
    pub fn subject<'a>(&'a self, tool: &'a str) -> Subject<'a> {
        Subject {
            tool,
            access: self.access,
            paths: &self.paths,
            command: self.command.as_ref(),
        }
    }
}

/// What a finished call returns.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The result text the model reads.
    pub for_model: String,
    /// The card's final content: a diff for edits and writes, the terminal for commands, text
    /// otherwise.
    pub content: Vec<ToolContent>,
    /// Structured result for the card's raw output.
    pub raw_output: serde_json::Value,
    /// The call ran but did not succeed (a command that exited non-zero or timed out): the
    /// card ends `failed` and the result is an error result, but the content is kept.
    pub failed: bool,
}

impl ToolOutput {
    /// The card's final update: completed or failed, the content, the raw output.
    pub fn card_update(&self) -> ToolCardUpdate {
        ToolCardUpdate {
            status: Some(if self.failed {
                ToolStatus::Failed
            } else {
                ToolStatus::Completed
            }),
            content: Some(self.content.clone()),
            raw_output: Some(self.raw_output.clone()),
            ..ToolCardUpdate::default()
        }
    }
}

/// One tool.
#[async_trait]
pub trait ToolHandler: Send + Sync {
    /// The name the model calls it by.
    fn name(&self) -> &str;
    /// Name, description and JSON Schema, as sent to the model.
    fn spec(&self) -> ToolSpec;
    /// The most this tool can do: used to hide tools per mode and to run read-only calls
    /// concurrently. The policy judges [`Prepared::access`] of each call.
    fn access(&self) -> Access;
    /// Validates `args`, resolves paths, computes the preview. No side effects.
    async fn prepare(
        &self,
        args: &serde_json::Value,
        ctx: &ToolContext<'_>,
    ) -> Result<Prepared, ToolError>;
    /// Runs the call `prepared` describes (`args` are the same that were prepared).
    async fn run(
        &self,
        args: &serde_json::Value,
        prepared: &Prepared,
        ctx: &ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError>;
}

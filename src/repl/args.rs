//! Arguments of `hearth repl`.

use clap::Args;

use crate::agent::Mode;

/// Arguments of `hearth repl`.
#[derive(Debug, Clone, Default, Args)]
pub struct ReplArgs {
    /// The model: `endpoint:model` or a bare model id (default: the configured default).
    #[arg(long)]
    pub model: Option<String>,

    /// The starting mode: ask, accept-edits, plan or bypass (default: the configured mode).
    #[arg(long)]
    pub mode: Option<Mode>,

    /// Continue the most recent session of this directory.
    #[arg(long = "continue", conflicts_with = "resume")]
    pub continue_last: bool,

    /// Resume the session with this id.
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,
}

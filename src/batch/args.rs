use std::path::PathBuf;

use clap::{Args, ValueEnum};

use hearth_conversation::Mode;

/// Arguments of `hearth run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The prompt. Without it (and without --batch) the prompt is read from stdin.
    #[arg(
        short = 'p',
        long = "prompt",
        value_name = "TEXT",
        conflicts_with = "batch"
    )]
    pub prompt: Option<String>,

    /// A batch file: JSON lines of {"id", "prompt", "cwd"?, "model"?, "mode"?}.
    #[arg(long, value_name = "FILE")]
    pub batch: Option<PathBuf>,

    /// What to print on stdout.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,

    /// The model: `endpoint:model` or a bare model id (default: the configured default).
    #[arg(long)]
    pub model: Option<String>,

    /// The mode. `ask` (the default) denies anything that would ask, and reports the denials.
    #[arg(long, value_parser = parse_mode)]
    pub mode: Option<Mode>,

    /// Let writes and edits run without asking.
    #[arg(long)]
    pub allow_writes: bool,

    /// Let commands run without asking.
    #[arg(long)]
    pub allow_commands: bool,

    /// Batch prompts to run at once.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub jobs: u16,

    /// Working directory of the prompt (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    /// Continue the most recent session of the working directory.
    #[arg(long = "continue", conflicts_with_all = ["resume", "batch"])]
    pub continue_last: bool,

    /// Continue the session with this id.
    #[arg(long, value_name = "ID", conflicts_with = "batch")]
    pub resume: Option<String>,

    /// Give up on a prompt after this many seconds (exit code 3).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// The answer as plain text.
    Text,
    /// One JSON result object per prompt.
    Json,
    /// Every event as a JSON line, then the result object.
    StreamJson,
}

fn parse_mode(value: &str) -> Result<Mode, String> {
    Mode::from_id(value).ok_or_else(|| {
        let ids: Vec<&str> = Mode::ALL.iter().map(|m| m.id()).collect();
        format!("unknown mode `{value}` (one of {})", ids.join(", "))
    })
}

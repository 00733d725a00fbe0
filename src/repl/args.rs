//! Arguments of `hearth repl`.

use clap::Args;

use hearth_conversation::Mode;

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

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, CliCommand};

    fn parse(args: &[&str]) -> Result<ReplArgs, clap::Error> {
        let cli = Cli::try_parse_from([&["hearth", "repl"], args].concat())?;
        match cli.command {
            Some(CliCommand::Repl(args)) => Ok(args),
            other => panic!("not a repl command: {other:?}"),
        }
    }

    #[test]
    fn flags_parse_and_conflicts_are_refused() {
        let args = parse(&["--model", "lan:qwen", "--mode", "plan", "--continue"]).unwrap();
        assert_eq!(args.model.as_deref(), Some("lan:qwen"));
        assert_eq!(args.mode, Some(Mode::Plan));
        assert!(args.continue_last);
        assert_eq!(
            parse(&["--resume", "abc"]).unwrap().resume.as_deref(),
            Some("abc")
        );
        assert!(parse(&["--mode", "yolo"]).is_err());
        assert!(parse(&["--continue", "--resume", "abc"]).is_err());
    }
}

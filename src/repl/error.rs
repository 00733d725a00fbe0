//! Why the REPL could not start or had to stop.

use rustyline::error::ReadlineError;

/// Why `hearth repl` stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ReplError {
    /// The line editor failed (the terminal went away); the REPL ends and reports it.
    #[error("line editor: {0}")]
    Editor(#[from] ReadlineError),
    /// `--model` names no configured endpoint; the REPL does not start.
    #[error("model `{0}`: no endpoint is configured")]
    UnknownModel(String),
    /// The working directory is unreadable; the REPL does not start.
    #[error("cannot determine the working directory: {0}")]
    Cwd(std::io::Error),
}

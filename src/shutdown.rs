//! The signals that end hearth in an orderly way. SIGTERM (an editor quitting, `kill`) and
//! SIGHUP (the terminal closed) would otherwise end the process at once, leaving commands and
//! MCP servers running; caught, they end the command so everything it started is stopped.

/// A signal that asks hearth to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Termination {
    Term,
    Hangup,
}

impl Termination {
    /// The exit code a shell reports for a process ended by this signal.
    pub fn exit_code(self) -> u8 {
        match self {
            Self::Term => 128 + 15,
            Self::Hangup => 128 + 1,
        }
    }
}

impl std::fmt::Display for Termination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Term => "SIGTERM",
            Self::Hangup => "SIGHUP",
        })
    }
}

/// Resolves at the first SIGTERM or SIGHUP. If a handler cannot be installed, that signal
/// keeps its default action (the process ends), which is logged.
pub async fn termination() -> Termination {
    use tokio::signal::unix::{SignalKind, signal};
    let install = |kind: SignalKind, name: &str| match signal(kind) {
        Ok(stream) => Some(stream),
        Err(err) => {
            tracing::warn!("cannot handle {name}: {err}");
            None
        }
    };
    let mut term = install(SignalKind::terminate(), "SIGTERM");
    let mut hup = install(SignalKind::hangup(), "SIGHUP");
    tokio::select! {
        Some(()) = async { term.as_mut()?.recv().await } => Termination::Term,
        Some(()) = async { hup.as_mut()?.recv().await } => Termination::Hangup,
        else => std::future::pending().await,
    }
}

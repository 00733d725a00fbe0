//! The REPL's link to the session store: `--continue`, `--resume ID`, `/sessions` and
//! `/resume` all come through here. The store is not wired into this branch yet, so these
//! say so; connecting it means filling in these two functions.

use std::path::Path;

use crate::agent::{AgentCore, AgentEvent, Session};

/// Which stored session to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stored {
    /// The most recent session of the directory (`--continue`, `/resume` without an id).
    Latest,
    /// A session by id (`--resume ID`, `/resume ID`).
    Id(String),
}

/// A reopened session and the events that replay its history on screen.
pub struct Reopened {
    pub session: Session,
    pub replay: Vec<AgentEvent>,
}

/// Why a stored session could not be opened or listed. The REPL shows the message and goes on
/// with the session it has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionsError {
    #[error("not available yet: {0} needs the session store, which is not connected")]
    NotAvailable(&'static str),
}

/// Opens a stored session of `cwd`.
pub async fn open_stored(
    _core: &AgentCore,
    _cwd: &Path,
    which: &Stored,
) -> Result<Reopened, SessionsError> {
    Err(SessionsError::NotAvailable(match which {
        Stored::Latest => "continuing the last session",
        Stored::Id(_) => "resuming a session",
    }))
}

/// One line per stored session of `cwd`, newest first.
pub async fn list_stored(_core: &AgentCore, _cwd: &Path) -> Result<Vec<String>, SessionsError> {
    Err(SessionsError::NotAvailable("listing sessions"))
}

//! What can go wrong in the session store. Each variant says what the caller does about it.

use std::path::PathBuf;

use hearth_conversation::SessionId;

/// Why a session id read from a client was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IdProblem {
    #[error("it is empty")]
    Empty,
    #[error("it is longer than {max} characters")]
    TooLong { max: usize },
    /// Anything outside `[A-Za-z0-9_-]`: separators, dots, NUL, spaces, non-ASCII.
    #[error("it contains {0:?}; only ASCII letters, digits, '-' and '_' are allowed")]
    BadChar(char),
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No stored session has this id. ACP answers resource-not-found; the CLI says so and exits
    /// non-zero. Never a crash.
    #[error("no stored session with id {0}")]
    UnknownSession(SessionId),

    /// A session id from outside (client, command line) is not one hearth could have made. The
    /// caller refuses the request (ACP invalid-params) and touches no file.
    #[error("invalid session id {id:?}: {reason}")]
    InvalidId { id: String, reason: IdProblem },

    /// A list cursor that this store did not hand out (or from another version). The caller
    /// refuses the request as invalid params; listing again without a cursor works.
    #[error("invalid list cursor {0:?}")]
    InvalidCursor(String),

    /// Reading or writing a file failed (permissions, disk full, file gone). For a write, the
    /// round stays in memory and the session goes on; the caller shows the user the message
    /// (the store already logged it). For a read, the one session is unavailable.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A session file whose header (line 1) is missing or unreadable: nothing in it can be
    /// attributed to a project, so the session cannot be loaded. The caller reports the file and
    /// line; other sessions are unaffected. (Damage after line 1 is a
    /// [`super::LoadWarning`], never this error.)
    #[error("{path}:{line}: {problem}")]
    Corrupt {
        path: PathBuf,
        line: usize,
        problem: String,
    },

    /// The file was written by a newer hearth whose format this one does not know. The caller
    /// tells the user to upgrade; the file is left untouched.
    #[error(
        "{path}: session format version {version} is newer than this hearth supports ({supported})"
    )]
    UnsupportedVersion {
        path: PathBuf,
        version: u32,
        supported: u32,
    },

    /// Neither `HEARTH_DATA_DIR` nor a platform data directory is available, or
    /// `HEARTH_DATA_DIR` is not an absolute path. The caller runs without persistence and
    /// warns once.
    #[error("no data directory for sessions: {0}")]
    NoDataDir(String),

    /// A writer was opened outside a tokio runtime (a programming error in the front end).
    #[error("the session writer needs a tokio runtime")]
    NoRuntime,

    /// Another hearth process has this session open for writing (one writer per session, or
    /// rounds interleave). The caller refuses to open it — ACP answers an error, the CLI says
    /// so and exits — and the other process and the file are untouched.
    #[error(
        "session {0} is open in another hearth process; close it there, or start a new session"
    )]
    Busy(SessionId),

    /// The writer task is gone (it panicked, or the runtime shut down): later records are not
    /// written. The caller reports it and keeps the session running in memory.
    #[error("the session writer for {0} has stopped")]
    WriterStopped(SessionId),
}

impl StoreError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}

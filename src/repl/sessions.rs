//! The REPL's link to the session store: `--continue`, `--resume ID`, `/sessions` and
//! `/resume` all come through here, on the same store Zed and `hearth run` use.

use std::path::Path;
use std::sync::Arc;

use hearth_conversation::AgentEvent;

use crate::agent::{AgentCore, Session};

use crate::store::{StoreError, validate_session_id};

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
#[derive(Debug, thiserror::Error)]
pub enum SessionsError {
    #[error("sessions are not saved here: no data directory (set HEARTH_DATA_DIR)")]
    NoStore,
    #[error("no saved session in {0}")]
    NoneHere(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Task(String),
}

/// Opens a stored session of `cwd`.
pub async fn open_stored(
    core: &Arc<AgentCore>,
    cwd: &Path,
    which: &Stored,
) -> Result<Reopened, SessionsError> {
    let core = core.clone();
    let cwd = cwd.to_path_buf();
    let which = which.clone();
    tokio::task::spawn_blocking(move || {
        let store = core.store.as_ref().ok_or(SessionsError::NoStore)?;
        let id = match which {
            Stored::Id(raw) => validate_session_id(&raw)?,
            Stored::Latest => {
                let page = store.list(Some(&cwd), None, 1)?;
                page.sessions
                    .into_iter()
                    .next()
                    .map(|s| s.id)
                    .ok_or_else(|| SessionsError::NoneHere(cwd.display().to_string()))?
            }
        };
        let (session, snapshot) = core.restore_session(&id)?;
        let mut replay = snapshot.replay;
        replay.retain(|e| !matches!(e, AgentEvent::Usage { .. }));
        Ok(Reopened {
            session,
            replay: replay
                .into_iter()
                .map(AgentEvent::with_terminals_as_text)
                .collect(),
        })
    })
    .await
    .map_err(|e| SessionsError::Task(e.to_string()))?
}

/// One line per stored session of `cwd`, newest first.
pub async fn list_stored(core: &Arc<AgentCore>, cwd: &Path) -> Result<Vec<String>, SessionsError> {
    let core = core.clone();
    let cwd = cwd.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let store = core.store.as_ref().ok_or(SessionsError::NoStore)?;
        let page = store.list(Some(&cwd), None, 20)?;
        Ok(page
            .sessions
            .into_iter()
            .map(|s| {
                let when = s.updated_at.format("%Y-%m-%d %H:%M");
                format!(
                    "{}  {when}  {:>3} rounds  {}",
                    s.id,
                    s.rounds,
                    s.title.unwrap_or_default()
                )
            })
            .collect())
    })
    .await
    .map_err(|e| SessionsError::Task(e.to_string()))?
}

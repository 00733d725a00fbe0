//! Stored sessions over ACP: list, load (with replay), resume, delete.

use std::path::PathBuf;
use std::sync::Arc;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    DeleteSessionRequest, DeleteSessionResponse, ListSessionsRequest, ListSessionsResponse,
    LoadSessionRequest, LoadSessionResponse, McpServer, ResumeSessionRequest,
    ResumeSessionResponse, SessionInfo, SessionNotification, SessionUpdate, UsageUpdate,
};
use hearth_conversation::AgentEvent;

use super::error::AcpError;
use super::mcp_servers::{Opened, attach};
use super::options::{mode_state, options_for};
use super::render;
use super::state::AcpState;
use crate::agent::Session;
use crate::store::{SessionSnapshot, StoreError, canonical_cwd, validate_session_id};

/// Sessions per `session/list` page.
const PAGE: usize = 50;

pub async fn list(
    state: &Arc<AcpState>,
    req: ListSessionsRequest,
) -> Result<ListSessionsResponse, AcpError> {
    let core = state.core.clone();
    let page = tokio::task::spawn_blocking(move || {
        let store = core.store.as_ref().ok_or(AcpError::NoStore)?;
        store
            .list(req.cwd.as_deref(), req.cursor.as_deref(), PAGE)
            .map_err(AcpError::from)
    })
    .await
    .map_err(|e| AcpError::Internal(e.to_string()))??;
    let sessions = page
        .sessions
        .into_iter()
        .map(|s| {
            SessionInfo::new(s.id.to_string(), s.cwd)
                .title(s.title)
                .updated_at(
                    s.updated_at
                        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                )
        })
        .collect();
    Ok(ListSessionsResponse::new(sessions).next_cursor(page.next_cursor))
}

/// A session reopened by `session/load` or `session/resume`.
struct Reopened {
    session: Arc<Session>,
    snapshot: SessionSnapshot,
    /// One line per MCP server that could not be started.
    notices: Vec<String>,
    /// The directory the session worked in before the request moved it, when it did.
    moved_from: Option<PathBuf>,
}

/// Restores a session (or finds it live) in the request's `cwd`, with its stored snapshot and
/// the notices about MCP servers that could not start. A restored session starts `servers`;
/// a live one keeps the servers it has. The request's directory is the session's from now on:
/// the stored one is history.
async fn restore(
    state: &Arc<AcpState>,
    raw_id: &str,
    (cwd, extra): (PathBuf, Vec<PathBuf>),
    servers: Vec<McpServer>,
) -> Result<Reopened, AcpError> {
    let extra = super::session_ops::extra_dirs(extra)?;
    if !cwd.is_absolute() {
        return Err(AcpError::InvalidParams(format!(
            "cwd must be an absolute path, got {}",
            cwd.display()
        )));
    }
    let id = validate_session_id(raw_id)?;
    let core = state.core.clone();
    let (session, snapshot, notices) = match state.session(id.as_str()) {
        // A session still open in this process stays the one that serves prompts; what the
        // store holds of it is only the replay. One that nothing was stored for yet (no store,
        // or its file could not be written) replays nothing but is still the session.
        Some(live) => {
            let stored = {
                let (core, id) = (core.clone(), id.clone());
                tokio::task::spawn_blocking(move || core.stored_snapshot(&id))
                    .await
                    .map_err(|e| AcpError::Internal(e.to_string()))?
            };
            let snapshot = stored.unwrap_or_else(|err| {
                tracing::debug!(session = %id, "nothing stored to replay: {err}");
                SessionSnapshot::empty(id.clone(), live.cwd())
            });
            (live, snapshot, Vec::new())
        }
        None => {
            let (fresh, snapshot) = {
                let (core, id) = (core.clone(), id.clone());
                tokio::task::spawn_blocking(move || core.restore_session(&id))
                    .await
                    .map_err(|e| AcpError::Internal(e.to_string()))??
            };
            let (fresh, notices) = attach(state, fresh, servers).await;
            let session = Arc::new(fresh);
            state.insert_session(session.clone());
            (session, snapshot, notices)
        }
    };
    session.set_extra_dirs(extra);
    let before = session.cwd();
    let moved_from = (canonical_cwd(&before) != canonical_cwd(&cwd)).then(|| {
        tracing::info!(session = %id, from = %before.display(), to = %cwd.display(), "session moved");
        session.move_to(cwd)
    });
    tracing::info!(session = %id, rounds = snapshot.rounds, "session restored");
    Ok(Reopened {
        session,
        snapshot,
        notices,
        moved_from,
    })
}

pub async fn load(
    state: &Arc<AcpState>,
    req: LoadSessionRequest,
    cx: &ConnectionTo<Client>,
) -> Result<Opened<LoadSessionResponse>, AcpError> {
    if state.choices().is_empty() {
        state.set_choices(state.core.catalog.choices().await);
    }
    let Reopened {
        session,
        snapshot,
        notices,
        moved_from,
    } = restore(
        state,
        &req.session_id.0,
        (req.cwd, req.additional_directories),
        req.mcp_servers,
    )
    .await?;
    // Zed registers the thread before it sends session/load: the whole history goes out as
    // updates first, then the answer.
    let notify = |update: SessionUpdate| {
        cx.send_notification(SessionNotification::new(req.session_id.clone(), update))
            .map_err(|e| AcpError::Internal(e.message))
    };
    for event in snapshot.replay {
        for update in render::session_update(event.with_terminals_as_text()) {
            notify(update)?;
        }
    }
    if let Some(title) = snapshot.title {
        for update in render::session_update(AgentEvent::SessionTitle { title }) {
            notify(update)?;
        }
    }
    if let Some(usage) = snapshot.usage {
        notify(SessionUpdate::UsageUpdate(UsageUpdate::new(
            usage.used, usage.size,
        )))?;
    }
    if let Some(before) = moved_from {
        let text = format!(
            "This conversation happened in {}; from now on it works in {}.",
            before.display(),
            session.cwd().display()
        );
        for update in render::session_update(AgentEvent::Notice { text }) {
            notify(update)?;
        }
    }
    let settings = session.settings();
    Ok(Opened {
        response: LoadSessionResponse::new()
            .config_options(options_for(state, &settings))
            .modes(mode_state(settings.mode)),
        session_id: req.session_id,
        settings,
        notices,
    })
}

pub async fn resume(
    state: &Arc<AcpState>,
    req: ResumeSessionRequest,
) -> Result<Opened<ResumeSessionResponse>, AcpError> {
    if state.choices().is_empty() {
        state.set_choices(state.core.catalog.choices().await);
    }
    let Reopened {
        session, notices, ..
    } = restore(
        state,
        &req.session_id.0,
        (req.cwd, req.additional_directories),
        req.mcp_servers,
    )
    .await?;
    let settings = session.settings();
    Ok(Opened {
        response: ResumeSessionResponse::new()
            .config_options(options_for(state, &settings))
            .modes(mode_state(settings.mode)),
        session_id: req.session_id,
        settings,
        notices,
    })
}

pub async fn delete(
    state: &Arc<AcpState>,
    req: DeleteSessionRequest,
) -> Result<DeleteSessionResponse, AcpError> {
    let id = validate_session_id(&req.session_id.0)?;
    if let Some(live) = state.remove_session(id.as_str()) {
        release(live).await;
    }
    let core = state.core.clone();
    tokio::task::spawn_blocking(move || {
        let store = core.store.as_ref().ok_or(AcpError::NoStore)?;
        store.delete(&id).map_err(AcpError::from)
    })
    .await
    .map_err(|e| AcpError::Internal(e.to_string()))??;
    Ok(DeleteSessionResponse::new())
}

/// How long a closing session waits for its cancelled turn to let go of the history.
const TURN_STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Ends a live session that is leaving this process (closed or deleted): cancels its turn,
/// waits (bounded) for the turn to finish with the history, stops its MCP servers gracefully,
/// and drops it. Awaited before the answer, so the session's store lock is released by the
/// time the client hears back: a `session/load` right after `session/close` must not find the
/// session "open in another process" because a background task still held it.
pub async fn release(session: Arc<Session>) {
    session.cancel();
    if tokio::time::timeout(TURN_STOP_WAIT, session.history())
        .await
        .is_err()
    {
        tracing::warn!(session = %session.id, "the cancelled turn did not stop in time");
    }
    if let Some(tools) = session.tools() {
        tools.shutdown().await;
    }
}

impl From<StoreError> for AcpError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::UnknownSession(id) => AcpError::UnknownSession(id.to_string()),
            StoreError::InvalidId { .. } | StoreError::InvalidCursor(_) => {
                AcpError::InvalidParams(err.to_string())
            }
            other => AcpError::Internal(other.to_string()),
        }
    }
}

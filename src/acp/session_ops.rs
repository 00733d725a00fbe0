//! Session lifecycle requests: new, set option, set mode.

use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    NewSessionRequest, NewSessionResponse, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse,
};
use hearth_conversation::Mode;

use super::announce::Changed;
use super::error::AcpError;
use super::mcp_servers::{Opened, attach};
use super::options::{MODE_OPTION, MODEL_OPTION, mode_state, options_for};
use super::state::AcpState;

pub async fn new_session(
    state: &AcpState,
    req: NewSessionRequest,
) -> Result<Opened<NewSessionResponse>, AcpError> {
    if !req.cwd.is_absolute() {
        return Err(AcpError::InvalidParams(format!(
            "cwd must be an absolute path, got {}",
            req.cwd.display()
        )));
    }
    let extra = extra_dirs(req.additional_directories)?;
    let choices = state.core.catalog.choices().await;
    let settings = state.core.default_settings(None, None, &choices);
    state.set_choices(choices);
    let session = state.core.new_session(req.cwd, settings.clone());
    session.set_extra_dirs(extra);
    // An id handed to a client must stay resumable and loadable, prompted or not.
    if let Some(persist) = session.persistence() {
        persist.create_now().await;
    }
    let (session, notices) = attach(state, session, req.mcp_servers).await;
    let session = Arc::new(session);
    tracing::info!(session = %session.id, cwd = %session.cwd().display(), "session opened");
    state.insert_session(session.clone());
    let session_id = session.id.to_string();
    Ok(Opened {
        response: NewSessionResponse::new(session_id.clone())
            .config_options(options_for(state, &settings))
            .modes(mode_state(settings.mode)),
        session_id: session_id.into(),
        settings,
        notices,
    })
}

pub fn set_config_option(
    state: &AcpState,
    req: SetSessionConfigOptionRequest,
) -> Result<Changed<SetSessionConfigOptionResponse>, AcpError> {
    let session = state
        .session(&req.session_id.0)
        .ok_or_else(|| AcpError::UnknownSession(req.session_id.0.to_string()))?;
    let before = session.settings();
    let unchanged = |response| Changed {
        response,
        session_id: req.session_id.clone(),
        before: before.clone(),
        after: before.clone(),
    };
    let value = req
        .value
        .as_value_id()
        .map(|v| v.0.to_string())
        .ok_or_else(|| {
            AcpError::InvalidParams(format!("option `{}` takes a value id", req.config_id.0))
        })?;
    let settings = match &*req.config_id.0 {
        MODEL_OPTION => {
            let offered = state.choices().into_iter().find(|c| c.value_id == value);
            let current = session
                .settings()
                .model
                .map(|m| state.core.catalog.value_id(&m));
            let model = match offered {
                Some(choice) => choice.model,
                None if current.as_deref() == Some(value.as_str()) => {
                    return Ok(unchanged(SetSessionConfigOptionResponse::new(options_for(
                        state, &before,
                    ))));
                }
                None => {
                    return Err(AcpError::InvalidParams(format!(
                        "model `{value}` is not offered"
                    )));
                }
            };
            tracing::info!(session = %session.id, model = %value, "model changed");
            session.update_settings(|s| s.model = Some(model))
        }
        MODE_OPTION => {
            let mode = Mode::from_id(&value)
                .ok_or_else(|| AcpError::InvalidParams(format!("unknown mode `{value}`")))?;
            session.update_settings(|s| s.mode = mode)
        }
        other => {
            return Err(AcpError::InvalidParams(format!(
                "unknown config option `{other}`"
            )));
        }
    };
    Ok(Changed {
        response: SetSessionConfigOptionResponse::new(options_for(state, &settings)),
        session_id: req.session_id.clone(),
        before,
        after: settings,
    })
}

pub fn set_mode(
    state: &AcpState,
    req: SetSessionModeRequest,
) -> Result<Changed<SetSessionModeResponse>, AcpError> {
    let session = state
        .session(&req.session_id.0)
        .ok_or_else(|| AcpError::UnknownSession(req.session_id.0.to_string()))?;
    let mode = Mode::from_id(&req.mode_id.0)
        .ok_or_else(|| AcpError::InvalidParams(format!("unknown mode `{}`", req.mode_id.0)))?;
    let before = session.settings();
    let after = session.update_settings(|s| s.mode = mode);
    Ok(Changed {
        response: SetSessionModeResponse::new(),
        session_id: req.session_id,
        before,
        after,
    })
}

/// The client's additional directories, which must be absolute like the cwd: a relative one
/// would be resolved against hearth's own working directory, which is nobody's project.
pub fn extra_dirs(dirs: Vec<std::path::PathBuf>) -> Result<Vec<std::path::PathBuf>, AcpError> {
    match dirs.iter().find(|d| !d.is_absolute()) {
        Some(relative) => Err(AcpError::InvalidParams(format!(
            "additionalDirectories must be absolute paths, got {}",
            relative.display()
        ))),
        None => Ok(dirs),
    }
}

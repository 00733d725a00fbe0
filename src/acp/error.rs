//! The one place where hearth's failures become ACP errors.

use agent_client_protocol::{Error, ErrorCode};

use crate::agent::TurnError;

/// A failure to answer an ACP request.
#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    /// The session id is not one of ours (or was closed): resource-not-found with the id.
    #[error("unknown session `{0}`")]
    UnknownSession(String),
    /// A request parameter that makes no sense (relative cwd, an option value not offered).
    #[error("{0}")]
    InvalidParams(String),
    /// The prompt turn failed: the message names the endpoint and the cause.
    #[error(transparent)]
    Turn(#[from] TurnError),
    /// Sessions cannot be saved or read here (no data directory).
    #[error("session storage is unavailable: no data directory (set HEARTH_DATA_DIR)")]
    NoStore,
    /// A failure inside hearth (file I/O, a task that died); the message says what.
    #[error("{0}")]
    Internal(String),
}

impl From<AcpError> for Error {
    fn from(err: AcpError) -> Self {
        let message = err.to_string();
        match err {
            AcpError::UnknownSession(id) => Error::new(ErrorCode::RESOURCE_NOT_FOUND, message)
                .data(serde_json::json!({ "sessionId": id })),
            AcpError::InvalidParams(_) => Error::new(ErrorCode::INVALID_PARAMS, message),
            AcpError::Turn(_) | AcpError::NoStore | AcpError::Internal(_) => {
                Error::new(ErrorCode::INTERNAL_ERROR, message)
            }
        }
    }
}

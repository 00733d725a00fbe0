//! The engine's error type and its three-way fault classification.

use crate::fault::{self, FaultClass};
use hearth_backend::BackendError;

/// Everything that can go wrong inside the engine. [`EngineError::class`] says which of the
/// three fault classes an error belongs to, which decides what happens to the sequence's cache
/// and to the model.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The request was malformed (empty prompt, bad parameters). Not retried; no state changed.
    #[error("invalid request: {0}")]
    InvalidRequest(String),

    /// Prompt plus generation does not fit the model's context. The turn loop compacts and
    /// retries once.
    #[error("context overflow: {needed} tokens needed, the model holds {limit}")]
    ContextOverflow { needed: usize, limit: usize },

    /// A token id outside the vocabulary. A caller bug; not retried.
    #[error("token id {id} is outside the vocabulary of {vocab}")]
    TokenOutOfRange { id: u32, vocab: usize },

    /// A cache position that does not exist (truncate past the end). A caller bug; not retried.
    #[error("bad cache position {position}: the cache holds {len} tokens")]
    BadPosition { position: usize, len: usize },

    /// The caller cancelled. Not an error for the user; the turn ends as cancelled.
    #[error("cancelled")]
    Cancelled,

    /// Tokenizing or detokenizing failed. The request fails; the model keeps serving.
    #[error("tokenizer: {0}")]
    Tokenizer(String),

    /// The device ran out of memory. The sequence's cache is reset; the caller may retry with
    /// a shorter prompt.
    #[error("out of memory: {0}")]
    OutOfMemory(String),

    /// A tensor operation failed. Classified from its error chain (see [`crate::fault`]).
    #[error("tensor error: {0}")]
    Tensor(#[from] candle_core::Error),

    /// CPU-side code panicked. The request fails and its sequence is reset; the weights are
    /// intact, so the model keeps serving.
    #[error("engine panicked: {0}")]
    Panic(String),

    /// The model faulted on its device earlier and is being reloaded. Refused at once.
    #[error("model poisoned: {cause}; reloading")]
    Poisoned { cause: String },

    /// The model could not be brought back (reloads exhausted, or a sticky device fault that
    /// needs a process restart). Refused at once; the user restarts hearth.
    #[error("model failed: {0}")]
    Failed(String),

    /// The model file could not be loaded. Nothing stays allocated; a retry starts afresh.
    #[error("loading {path}: {message}")]
    Load { path: String, message: String },

    /// Fetching the model file failed outside any one source (no cache directory).
    #[error("fetching the model: {0}")]
    Fetch(String),

    /// Every source of the model file failed; the message lists them and says how to use a
    /// local file instead. The user fixes their network or config; not retried.
    #[error("{0}")]
    Unfetchable(crate::fetch::FetchFailure),

    /// The build lacks a feature the configuration asks for (e.g. `cuda`).
    #[error("hearth was built without the `{0}` feature")]
    NotCompiledWith(&'static str),

    /// File system error outside model loading (cache directory, temp files).
    #[error("io: {0}")]
    Io(#[from] std::io::Error),

    /// The engine thread is gone (it exited or could not start). Not retried.
    #[error("engine stopped: {0}")]
    EngineGone(String),
}

impl EngineError {
    /// The fault class of this error. Tensor errors are classified from their error chain.
    pub fn class(&self) -> FaultClass {
        match self {
            Self::OutOfMemory(_) => FaultClass::Resource,
            Self::Tensor(err) => fault::classify_tensor_error(err),
            Self::Poisoned { .. } | Self::Failed(_) => FaultClass::Device,
            _ => FaultClass::Request,
        }
    }

    /// Maps onto the backend seam's error for the agent, with `model` naming the local model.
    pub fn into_backend(self, model: &str) -> BackendError {
        match self {
            Self::ContextOverflow { .. } => BackendError::ContextWindowExceeded {
                model: model.to_string(),
                detail: self.to_string(),
            },
            Self::InvalidRequest(_) | Self::TokenOutOfRange { .. } | Self::BadPosition { .. } => {
                BackendError::InvalidRequest(self.to_string())
            }
            Self::OutOfMemory(detail) => BackendError::OutOfMemory { detail },
            Self::Poisoned { cause } => BackendError::ModelPoisoned {
                cause: format!("{cause}; reloading"),
            },
            Self::Failed(_)
            | Self::Load { .. }
            | Self::Fetch(_)
            | Self::Unfetchable(_)
            | Self::NotCompiledWith(_) => BackendError::ModelUnavailable {
                model: model.to_string(),
                reason: self.to_string(),
            },
            Self::Tensor(_) if self.class() == FaultClass::Device => BackendError::ModelPoisoned {
                cause: format!("{self}; reloading"),
            },
            Self::Tensor(_) if self.class() == FaultClass::Resource => BackendError::OutOfMemory {
                detail: self.to_string(),
            },
            other => BackendError::Internal(other.to_string()),
        }
    }
}

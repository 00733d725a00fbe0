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

    /// A state the engine's own code must never reach (see [`EngineBug`]): the request fails as
    /// an internal failure, never as "invalid request"; the model keeps serving.
    #[error("engine bug: {0}")]
    Bug(#[from] EngineBug),

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

    /// The model file could not be read while serving (an embedding table is read from it row
    /// by row: see `model::disk_rows`). The model is poisoned and reloaded, which checks the
    /// file again; a file that is gone for good fails the reload.
    #[error("reading {path}: {message}")]
    ModelFileRead { path: String, message: String },

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

/// A bug inside the engine, typed so that nothing classifies it by its text. Never the
/// request's fault: a retry fails the same way. Nothing on the device is suspect, so the model
/// keeps serving other requests.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineBug {
    /// The fused q/k/v projection did not give three outputs.
    #[error("the q/k/v projection gave {found} outputs, not 3")]
    QkvArity { found: usize },
    /// The fused gate/up projection did not give two outputs.
    #[error("the gate/up projection gave {found} outputs, not 2")]
    GateUpArity { found: usize },
    /// The embedding reads its rows from an output head that was not built.
    #[error("the embedding is tied to an output head that was not built")]
    TiedEmbeddingWithoutHead,
    /// A packed matmul got an input whose last dimension is not the weight's width.
    #[error("a matmul input has shape {input:?}; the weight takes {cols} columns")]
    MatmulShape { input: Vec<usize>, cols: usize },
    /// The fused attention kernel refused its buffers (`hearth_kernels::ShapeError`).
    #[error("{0}")]
    AttentionShape(String),
}

impl EngineError {
    /// The fault class of this error. Tensor errors are classified from their error chain.
    pub fn class(&self) -> FaultClass {
        match self {
            Self::OutOfMemory(_) => FaultClass::Resource,
            Self::Tensor(err) => fault::classify_tensor_error(err),
            Self::Poisoned { .. } | Self::Failed(_) | Self::ModelFileRead { .. } => {
                FaultClass::Device
            }
            _ => FaultClass::Request,
        }
    }

    /// Maps onto the backend seam's error for the agent, with `model` naming the local model.
    pub fn into_backend(self, model: &str) -> BackendError {
        match self {
            Self::ContextOverflow { limit, .. } => BackendError::ContextWindowExceeded {
                model: model.to_string(),
                detail: self.to_string(),
                // `needed` counts the answer's reserve too: it is no prompt size.
                prompt_tokens: None,
                window: u32::try_from(limit).ok(),
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
            Self::ModelFileRead { .. } => BackendError::ModelPoisoned {
                cause: format!("{self}; reloading"),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// An engine bug reaches the agent as an internal failure, never as a request it should
    /// not retry because it was invalid; nothing on the device is suspect.
    #[test]
    fn engine_bugs_are_internal_failures_and_poison_nothing() {
        let bugs = [
            EngineBug::QkvArity { found: 2 },
            EngineBug::GateUpArity { found: 3 },
            EngineBug::TiedEmbeddingWithoutHead,
            EngineBug::MatmulShape {
                input: vec![1, 3, 10],
                cols: 12,
            },
            EngineBug::AttentionShape("attention: q holds 3 values".into()),
        ];
        for bug in bugs {
            let error = EngineError::from(bug.clone());
            assert_eq!(error.class(), FaultClass::Request, "{bug}");
            match error.into_backend("m") {
                BackendError::Internal(message) => {
                    assert!(message.contains("engine bug"), "{message}");
                    assert!(message.contains(&bug.to_string()), "{message}");
                }
                other => panic!("{bug}: {other:?}"),
            }
        }
    }
}

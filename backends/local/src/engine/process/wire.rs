//! The JSON lines between an engine and its worker process: one message per line, each way.
//! Errors cross as [`WireError`], which keeps what callers act on (the variant, the numbers of
//! a context overflow, the fault class of a tensor error) and rebuilds an [`EngineError`] whose
//! message and class equal the original's.

use hearth_backend::{FinishReason, Progress, Usage};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::engine::{EngineConfig, EngineEvent, GenerateRequest, Health, Prompt};
use crate::error::{EngineBug, EngineError};
use crate::fault::FaultClass;
use crate::inject::ArmedFault;
use crate::sampler::SamplingParams;

/// From the supervisor to the worker.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToWorker {
    /// The first line: what to load, and (test builds only) the faults to arm.
    Start {
        config: Box<EngineConfig>,
        faults: Vec<ArmedFault>,
    },
    Generate {
        id: u64,
        request: WireRequest,
    },
    Cancel {
        id: u64,
    },
}

/// From the worker to the supervisor.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromWorker {
    Health {
        health: Health,
    },
    /// The canary tokens of the worker's first load, sent once it is healthy.
    Canary {
        tokens: Vec<u32>,
    },
    Event {
        id: u64,
        event: WireEvent,
    },
}

/// A [`GenerateRequest`] without its cancel token, which crosses as [`ToWorker::Cancel`].
#[derive(Debug, Serialize, Deserialize)]
pub struct WireRequest {
    pub prompt: Prompt,
    pub sampling: SamplingParams,
    pub max_tokens: Option<usize>,
    pub stop: Vec<String>,
    #[serde(default)]
    pub call_tools: Vec<hearth_backend::ToolSpec>,
    #[serde(default)]
    pub bare_calls: bool,
    #[serde(default)]
    pub answer_only: bool,
    #[serde(default)]
    pub call_first: bool,
}

impl WireRequest {
    pub fn from_request(req: &GenerateRequest) -> Self {
        Self {
            prompt: req.prompt.clone(),
            sampling: req.sampling.clone(),
            max_tokens: req.max_tokens,
            stop: req.stop.clone(),
            call_tools: req.call_tools.clone(),
            bare_calls: req.bare_calls,
            answer_only: req.answer_only,
            call_first: req.call_first,
        }
    }

    pub fn into_request(self, cancel: CancellationToken) -> GenerateRequest {
        GenerateRequest {
            prompt: self.prompt,
            sampling: self.sampling,
            max_tokens: self.max_tokens,
            stop: self.stop,
            call_tools: self.call_tools,
            bare_calls: self.bare_calls,
            answer_only: self.answer_only,
            call_first: self.call_first,
            cancel,
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireEvent {
    Progress(Progress),
    Text(String),
    Usage(Usage),
    Done(FinishReason),
    Failed { error: WireError, partial: String },
    Cancelled,
}

impl From<EngineEvent> for WireEvent {
    fn from(event: EngineEvent) -> Self {
        match event {
            EngineEvent::Progress(p) => Self::Progress(p),
            EngineEvent::Text(t) => Self::Text(t),
            EngineEvent::Usage(u) => Self::Usage(u),
            EngineEvent::Done(r) => Self::Done(r),
            EngineEvent::Failed { error, partial } => Self::Failed {
                error: WireError::from(&error),
                partial,
            },
            EngineEvent::Cancelled => Self::Cancelled,
        }
    }
}

impl From<WireEvent> for EngineEvent {
    fn from(event: WireEvent) -> Self {
        match event {
            WireEvent::Progress(p) => Self::Progress(p),
            WireEvent::Text(t) => Self::Text(t),
            WireEvent::Usage(u) => Self::Usage(u),
            WireEvent::Done(r) => Self::Done(r),
            WireEvent::Failed { error, partial } => Self::Failed {
                error: error.into(),
                partial,
            },
            WireEvent::Cancelled => Self::Cancelled,
        }
    }
}

/// An [`EngineError`] as it crosses the process boundary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireError {
    InvalidRequest(String),
    ContextOverflow {
        needed: usize,
        limit: usize,
    },
    TokenOutOfRange {
        id: u32,
        vocab: usize,
    },
    BadPosition {
        position: usize,
        len: usize,
    },
    Cancelled,
    Tokenizer(String),
    OutOfMemory(String),
    /// A tensor error's own message (without the `tensor error:` prefix) and its class.
    Tensor {
        message: String,
        class: FaultClass,
    },
    Panic(String),
    Bug(EngineBug),
    Poisoned {
        cause: String,
    },
    Failed(String),
    Load {
        path: String,
        message: String,
    },
    ModelFileRead {
        path: String,
        message: String,
    },
    Fetch(String),
    Io(String),
    Gone(String),
}

impl From<&EngineError> for WireError {
    fn from(error: &EngineError) -> Self {
        use EngineError as E;
        match error {
            E::InvalidRequest(m) => Self::InvalidRequest(m.clone()),
            E::ContextOverflow { needed, limit } => Self::ContextOverflow {
                needed: *needed,
                limit: *limit,
            },
            E::TokenOutOfRange { id, vocab } => Self::TokenOutOfRange {
                id: *id,
                vocab: *vocab,
            },
            E::BadPosition { position, len } => Self::BadPosition {
                position: *position,
                len: *len,
            },
            E::Cancelled => Self::Cancelled,
            E::Tokenizer(m) => Self::Tokenizer(m.clone()),
            E::OutOfMemory(m) => Self::OutOfMemory(m.clone()),
            E::Tensor(inner) => Self::Tensor {
                message: inner.to_string(),
                class: error.class(),
            },
            E::Panic(m) => Self::Panic(m.clone()),
            E::Bug(bug) => Self::Bug(bug.clone()),
            E::Poisoned { cause } => Self::Poisoned {
                cause: cause.clone(),
            },
            E::Failed(m) => Self::Failed(m.clone()),
            E::Load { path, message } => Self::Load {
                path: path.clone(),
                message: message.clone(),
            },
            E::ModelFileRead { path, message } => Self::ModelFileRead {
                path: path.clone(),
                message: message.clone(),
            },
            E::Fetch(_) | E::Unfetchable(_) => Self::Fetch(error.to_string()),
            E::NotCompiledWith(_) => Self::Failed(error.to_string()),
            E::Io(e) => Self::Io(e.to_string()),
            E::EngineGone(m) => Self::Gone(m.clone()),
        }
    }
}

impl From<WireError> for EngineError {
    fn from(error: WireError) -> Self {
        use WireError as W;
        match error {
            W::InvalidRequest(m) => Self::InvalidRequest(m),
            W::ContextOverflow { needed, limit } => Self::ContextOverflow { needed, limit },
            W::TokenOutOfRange { id, vocab } => Self::TokenOutOfRange { id, vocab },
            W::BadPosition { position, len } => Self::BadPosition { position, len },
            W::Cancelled => Self::Cancelled,
            W::Tokenizer(m) => Self::Tokenizer(m),
            W::OutOfMemory(m) => Self::OutOfMemory(m),
            W::Tensor { message, class } => Self::Tensor(tensor_error(message, class)),
            W::Panic(m) => Self::Panic(m),
            W::Bug(bug) => Self::Bug(bug),
            W::Poisoned { cause } => Self::Poisoned { cause },
            W::Failed(m) => Self::Failed(m),
            W::Load { path, message } => Self::Load { path, message },
            W::ModelFileRead { path, message } => Self::ModelFileRead { path, message },
            W::Fetch(m) => Self::Fetch(m),
            W::Io(m) => Self::Io(std::io::Error::other(m)),
            W::Gone(m) => Self::EngineGone(m),
        }
    }
}

/// A candle error with `message` that [`crate::fault`] classifies as `class`: a device fault
/// is rebuilt as candle's CUDA variant (unknown CUDA errors are faults even when their text
/// names no code); the other classes follow from the text, which names the CUDA code of an
/// out-of-memory error.
fn tensor_error(message: String, class: FaultClass) -> candle_core::Error {
    match class {
        FaultClass::Device => candle_core::Error::Cuda(Box::new(std::io::Error::other(message))),
        FaultClass::Resource | FaultClass::Request => candle_core::Error::Msg(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inject::InjectedFault;

    fn round_trip(error: EngineError) -> EngineError {
        let line = serde_json::to_string(&WireError::from(&error)).unwrap();
        serde_json::from_str::<WireError>(&line).unwrap().into()
    }

    #[test]
    fn errors_keep_their_message_and_class_across_the_wire() {
        let errors = vec![
            EngineError::ContextOverflow {
                needed: 40_000,
                limit: 32_768,
            },
            EngineError::InvalidRequest("empty prompt".into()),
            EngineError::OutOfMemory("kv cache".into()),
            EngineError::Poisoned {
                cause: "CUDA_ERROR_ILLEGAL_ADDRESS".into(),
            },
            EngineError::Panic("sampler".into()),
            EngineError::ModelFileRead {
                path: "model.gguf".into(),
                message: "the embedding row of token 7: failed to fill whole buffer".into(),
            },
            EngineBug::QkvArity { found: 2 }.into(),
            EngineBug::MatmulShape {
                input: vec![1, 7, 896],
                cols: 4864,
            }
            .into(),
            InjectedFault::Tensor.raise(),
            InjectedFault::OutOfMemory.raise(),
            InjectedFault::StickyCuda.raise(),
            InjectedFault::UnknownCuda.raise(),
        ];
        for error in errors {
            let (message, class) = (error.to_string(), error.class());
            let back = round_trip(error);
            assert_eq!(back.class(), class, "{message}");
            assert_eq!(back.to_string(), message);
        }
        assert_eq!(
            round_trip(EngineBug::TiedEmbeddingWithoutHead.into()).to_string(),
            EngineError::Bug(EngineBug::TiedEmbeddingWithoutHead).to_string()
        );
        assert!(matches!(
            round_trip(EngineBug::GateUpArity { found: 1 }.into()),
            EngineError::Bug(EngineBug::GateUpArity { found: 1 })
        ));
        assert!(matches!(
            round_trip(EngineError::ContextOverflow {
                needed: 9,
                limit: 8
            }),
            EngineError::ContextOverflow {
                needed: 9,
                limit: 8
            }
        ));
    }

    #[test]
    fn a_device_fault_the_classifier_cannot_read_stays_a_device_fault() {
        let opaque = EngineError::Tensor(candle_core::Error::Cuda(Box::new(
            std::io::Error::other("driver said nothing useful"),
        )));
        assert_eq!(opaque.class(), FaultClass::Device);
        assert_eq!(round_trip(opaque).class(), FaultClass::Device);
    }
}

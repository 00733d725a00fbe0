//! The seam between hearth's agent and whatever runs the model.
//!
//! A [`Backend`] turns a [`CompletionRequest`] into a stream of [`BackendEvent`]s, ending with
//! exactly one [`BackendEvent::Finished`] or one [`BackendError`]. Remote OpenAI-compatible
//! servers (crate `hearth-openai`) and the in-process engine (crate `hearth-local`) both sit
//! behind it, so the agent never knows which one answers.

mod backend;
mod describe;
mod error;
mod event;
mod request;

pub use backend::{Backend, EventStream, ModelInfo};
pub use describe::{ModelDescription, ServerKind, WindowSource, template_opens_reasoning};
pub use error::{BackendError, StreamLimit, TimeoutStage};
pub use event::{BackendEvent, FinishReason, NativeToolCall, Progress, Usage};
pub use request::{CompletionRequest, ContentPart, Message, Role, ToolSpec};

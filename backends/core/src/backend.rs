use std::pin::Pin;

use async_trait::async_trait;
use futures::Stream;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::{BackendError, BackendEvent, CompletionRequest};

/// What [`Backend::stream`] returns. The stream ends after [`BackendEvent::Finished`] or after
/// the first `Err`; nothing follows either.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<BackendEvent, BackendError>> + Send>>;

/// One model a backend can serve, as listed by [`Backend::list_models`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The id to put in [`CompletionRequest::model`].
    pub id: String,
    /// Context length in tokens, when the backend knows it.
    pub context_window: Option<u32>,
    /// Weight format, e.g. `Q4_K_M`, when the backend knows it.
    pub quantization: Option<String>,
}

impl ModelInfo {
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            context_window: None,
            quantization: None,
        }
    }
}

/// A source of completions: a remote endpoint or the local engine.
///
/// Dropping the returned stream or cancelling the token stops the work upstream: the HTTP
/// connection is closed, or the engine stops between prefill chunks and decode steps.
#[async_trait]
pub trait Backend: Send + Sync {
    /// Starts one completion. Errors that are known before any work starts may also arrive as
    /// the stream's first item; the call itself never blocks on the network or the device.
    fn stream(&self, request: CompletionRequest, cancel: CancellationToken) -> EventStream;

    /// The models this backend serves now.
    async fn list_models(&self) -> Result<Vec<ModelInfo>, BackendError>;

    /// The context window of `model` as the backend reports it, if it reports one.
    async fn context_window(&self, model: &str) -> Result<Option<u32>, BackendError> {
        let models = self.list_models().await?;
        Ok(models
            .into_iter()
            .find(|m| m.id == model)
            .and_then(|m| m.context_window))
    }

    /// Exact token count of `text` for `model`, where the backend has the real tokenizer.
    fn count_tokens(&self, _model: &str, _text: &str) -> Option<usize> {
        None
    }
}

use std::pin::Pin;

use async_trait::async_trait;
use futures::Stream;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::{BackendError, BackendEvent, CompletionRequest, ModelDescription, WindowSource};

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

    /// What the backend knows about `model`: its window and where that came from, the server
    /// kind, whether token counts are exact. Asked once per model (again while not
    /// [`ModelDescription::settled`]), before the first request; a backend may use the answer
    /// to choose its wire (Ollama's native chat). Never fails: what cannot be found out is left
    /// unknown. By default, the window the model list gives.
    async fn describe(&self, model: &str) -> ModelDescription {
        let listed = match self.list_models().await {
            Ok(models) => models
                .into_iter()
                .find(|m| m.id == model)
                .and_then(|m| m.context_window),
            Err(err) => {
                tracing::debug!("listing models to describe `{model}` failed: {err}");
                None
            }
        };
        ModelDescription {
            window: listed.filter(|t| *t > 0).map(|t| (t, WindowSource::Listed)),
            ..ModelDescription::unknown()
        }
    }

    /// Exact token count of `text` for `model`, where the backend has the real tokenizer.
    fn count_tokens(&self, _model: &str, _text: &str) -> Option<usize> {
        None
    }
}

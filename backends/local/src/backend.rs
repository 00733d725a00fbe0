//! [`LocalBackend`]: the engine behind hearth's `Backend` seam.

use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use hearth_backend::{
    Backend, BackendError, BackendEvent, CompletionRequest, EventStream, FinishReason,
    ModelDescription, ModelInfo, Progress, ServerKind, WindowSource,
};
use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::engine::{Engine, EngineConfig, EngineEvent, GenerateRequest, Health, Prompt};
use crate::error::EngineError;
use crate::sampler::SamplingParams;

/// The finish reason a cancelled local request ends with, so every stream has exactly one
/// terminal event.
pub const CANCELLED: &str = "cancelled";

/// The in-process engine as a [`Backend`]. Cheap to clone; all clones share one engine.
///
/// Prefix reuse needs no session id: the engine continues whichever cached sequence shares the
/// longest token prefix with the new prompt, which is exactly the previous round of the same
/// conversation.
#[derive(Clone)]
pub struct LocalBackend {
    engine: Arc<Engine>,
    sampling: SamplingParams,
}

impl LocalBackend {
    /// Starts the engine for `config` (reads the header now, loads weights on the engine
    /// thread). Blocks briefly: call from a blocking context.
    pub fn start(config: EngineConfig) -> Result<Self, EngineError> {
        Ok(Self::new(Engine::spawn(config)?))
    }

    pub fn new(engine: Engine) -> Self {
        Self {
            engine: Arc::new(engine),
            sampling: SamplingParams::default(),
        }
    }

    /// Sampling defaults for requests; a request's `temperature` overrides the one here.
    pub fn with_sampling(mut self, sampling: SamplingParams) -> Self {
        self.sampling = sampling;
        self
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    fn generate_request(
        &self,
        request: CompletionRequest,
        cancel: CancellationToken,
    ) -> GenerateRequest {
        if !request.tools.is_empty() {
            warn!("the local engine renders no native tools; send the tool block in-band");
        }
        let mut sampling = self.sampling.clone();
        if let Some(t) = request.temperature {
            sampling.temperature = t;
        }
        GenerateRequest {
            prompt: Prompt::Messages(request.messages),
            sampling,
            max_tokens: request.max_tokens.map(|n| n as usize),
            stop: request.stop,
            call_tools: request.hermes_tools,
            bare_calls: request.hold_bare_calls,
            answer_only: request.answer_only,
            call_first: request.call_first,
            cancel,
        }
    }
}

fn map_event(event: EngineEvent, model: &str) -> Result<BackendEvent, BackendError> {
    match event {
        EngineEvent::Progress(progress) => Ok(BackendEvent::Progress { progress }),
        EngineEvent::Text(text) => Ok(BackendEvent::Text { text }),
        EngineEvent::Usage(usage) => Ok(BackendEvent::Usage { usage }),
        EngineEvent::Done(reason) => Ok(BackendEvent::Finished { reason }),
        EngineEvent::Cancelled => Ok(BackendEvent::Finished {
            reason: FinishReason::Other(CANCELLED.into()),
        }),
        EngineEvent::Failed { error, .. } => Err(error.into_backend(model)),
    }
}

#[async_trait]
impl Backend for LocalBackend {
    fn stream(&self, request: CompletionRequest, cancel: CancellationToken) -> EventStream {
        let model = self.engine.summary().id.clone();
        let loading = match self.engine.health() {
            Health::Loading { fraction } => Some(BackendEvent::Progress {
                progress: Progress::LoadingModel {
                    model: model.clone(),
                    fraction: Some(fraction),
                },
            }),
            _ => None,
        };
        let rx = self.engine.submit(self.generate_request(request, cancel));
        let events = futures::stream::unfold((rx, false), move |(mut rx, ended)| {
            let model = model.clone();
            async move {
                if ended {
                    return None;
                }
                let event = rx.recv().await?;
                let terminal = event.is_terminal();
                Some((map_event(event, &model), (rx, terminal)))
            }
        });
        let head = futures::stream::iter(loading.map(Ok));
        Box::pin(head.chain(events))
    }

    async fn list_models(&self) -> Result<Vec<ModelInfo>, BackendError> {
        let s = self.engine.summary();
        Ok(vec![ModelInfo {
            id: s.id.clone(),
            context_window: u32::try_from(s.context_length).ok(),
            quantization: Some(s.quantization.clone()),
        }])
    }

    /// The engine knows its own window (the model's, capped by `max_context`) and counts
    /// tokens with the model's own tokenizer.
    async fn describe(&self, _model: &str) -> ModelDescription {
        let window = u32::try_from(self.engine.summary().context_length)
            .ok()
            .filter(|t| *t > 0)
            .map(|t| (t, WindowSource::Listed));
        ModelDescription {
            window,
            server: ServerKind::Engine,
            exact_token_counts: true,
            settled: true,
            // hearth renders the engine's prompts itself; the model-name rule decides.
            opens_in_reasoning: None,
        }
    }

    fn count_tokens(&self, _model: &str, text: &str) -> Option<usize> {
        self.engine.tokenizer().encode(text).ok().map(|t| t.len())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures::StreamExt;
    use hearth_backend::{Message, Role};

    use super::*;
    use crate::model::tiny::{self, TinySpec};

    fn backend() -> (LocalBackend, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let path = tiny::write(&TinySpec::qwen2(), dir.path(), "tiny-qwen");
        let backend = LocalBackend::start(EngineConfig::new(path))
            .unwrap()
            .with_sampling(SamplingParams::greedy());
        backend.engine().wait_ready(Duration::from_secs(30));
        (backend, dir)
    }

    #[tokio::test]
    async fn streams_text_usage_and_one_finish() {
        let (backend, _dir) = backend();
        let mut req =
            CompletionRequest::new("tiny-qwen", vec![Message::system("s"), Message::user("hi")]);
        req.max_tokens = Some(4);
        let events: Vec<_> = backend
            .stream(req, CancellationToken::new())
            .collect()
            .await;
        let finished = events
            .iter()
            .filter(|e| matches!(e, Ok(BackendEvent::Finished { .. })))
            .count();
        assert_eq!(finished, 1);
        assert!(matches!(
            events.last(),
            Some(Ok(BackendEvent::Finished { .. }))
        ));
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Ok(BackendEvent::Usage { .. })))
        );
        let models = backend.list_models().await.unwrap();
        assert_eq!(models[0].id, "tiny-qwen");
        assert_eq!(models[0].context_window, Some(512));
        let description = backend.describe("tiny-qwen").await;
        assert_eq!(description.window, Some((512, WindowSource::Listed)));
        assert_eq!(description.server, ServerKind::Engine);
        assert!(description.exact_token_counts && description.settled);
        assert_eq!(models[0].quantization.as_deref(), Some("Q8_0"));
        assert_eq!(backend.count_tokens("tiny-qwen", "<|im_start|>ab"), Some(3));
    }

    #[tokio::test]
    async fn cancelled_and_failed_requests_end_once() {
        let (backend, _dir) = backend();
        let cancel = CancellationToken::new();
        cancel.cancel();
        let req = CompletionRequest::new("m", vec![Message::user("x")]);
        let events: Vec<_> = backend.stream(req, cancel).collect().await;
        assert!(matches!(
            events.as_slice(),
            [Ok(BackendEvent::Finished { reason: FinishReason::Other(r) })] if r == CANCELLED
        ));
        let long = Message::text(Role::User, "y".repeat(600));
        let events: Vec<_> = backend
            .stream(
                CompletionRequest::new("m", vec![long]),
                CancellationToken::new(),
            )
            .collect()
            .await;
        assert!(matches!(
            events.as_slice(),
            [Err(BackendError::ContextWindowExceeded { .. })]
        ));
    }
}

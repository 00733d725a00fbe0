//! [`LazyLocalBackend`]: the local engine started on first use, fetching the default model
//! first when it is not cached, so `hearth` starts instantly and the editor is told what is
//! happening while the weights arrive and load.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::StreamExt;
use hearth_backend::{
    Backend, BackendError, BackendEvent, CompletionRequest, EventStream, ModelDescription,
    ModelInfo, Progress, ServerKind, WindowSource,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::backend::LocalBackend;
use crate::engine::EngineConfig;
use crate::fetch::{
    DEFAULT_MODEL_CONTEXT, DEFAULT_MODEL_ID, FetchProgress, cached_default_model,
    fetch_default_model,
};
use crate::model::ModelFiles;

/// Which weights the lazy backend runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSource {
    /// The built-in default (Qwen2.5-Coder-0.5B-Instruct), fetched into the cache on first use.
    Default,
    /// A GGUF file, or a safetensors directory, the user configured.
    File(PathBuf),
}

#[derive(Clone)]
pub struct LazyLocalBackend {
    source: ModelSource,
    configure: Arc<dyn Fn(PathBuf) -> EngineConfig + Send + Sync>,
    started: Arc<Mutex<Option<LocalBackend>>>,
    /// Serialises first starts: two early requests must not fetch twice.
    starting: Arc<tokio::sync::Mutex<()>>,
}

impl LazyLocalBackend {
    /// `configure` turns the model path into the engine's configuration.
    pub fn new(
        source: ModelSource,
        configure: impl Fn(PathBuf) -> EngineConfig + Send + Sync + 'static,
    ) -> Self {
        Self {
            source,
            configure: Arc::new(configure),
            started: Arc::default(),
            starting: Arc::default(),
        }
    }

    /// The id the model is listed under before it is loaded.
    pub fn model_id(&self) -> String {
        match &self.source {
            ModelSource::Default => DEFAULT_MODEL_ID.to_string(),
            ModelSource::File(path) => crate::model::ModelFiles::default_id(path),
        }
    }

    /// The window the engine will run with, from the model's header and `max_context`.
    fn window_before_start(&self) -> Option<u32> {
        let path = match &self.source {
            ModelSource::Default => cached_default_model(),
            ModelSource::File(path) => Some(path.clone()),
        };
        let (trained, cap) = match path {
            Some(path) => (
                ModelFiles::at(&path).header().ok()?.config.context_length,
                (self.configure)(path).max_context,
            ),
            // Not fetched yet: its window is known, and `max_context` does not depend on a path.
            None => (
                DEFAULT_MODEL_CONTEXT,
                (self.configure)(PathBuf::new()).max_context,
            ),
        };
        let window = cap.map_or(trained, |cap| cap.min(trained));
        u32::try_from(window).ok().filter(|w| *w > 0)
    }

    fn running(&self) -> Option<LocalBackend> {
        self.started
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Fetches (if needed) and starts the engine, reporting progress on `tx`.
    async fn ensure(
        &self,
        tx: &mpsc::Sender<Result<BackendEvent, BackendError>>,
    ) -> Result<LocalBackend, BackendError> {
        let _guard = self.starting.lock().await;
        if let Some(backend) = self.running() {
            return Ok(backend);
        }
        let model = self.model_id();
        let unavailable = |reason: String| BackendError::ModelUnavailable {
            model: model.clone(),
            reason,
        };
        let path = match &self.source {
            ModelSource::File(path) => path.clone(),
            ModelSource::Default => match cached_default_model() {
                Some(path) => path,
                None => {
                    let progress_tx = tx.clone();
                    let id = model.clone();
                    tokio::task::spawn_blocking(move || {
                        fetch_default_model(&mut |p| {
                            let fraction = fetch_fraction(p);
                            let event = BackendEvent::Progress {
                                progress: Progress::LoadingModel {
                                    model: id.clone(),
                                    fraction,
                                },
                            };
                            let _ = progress_tx.blocking_send(Ok(event));
                        })
                    })
                    .await
                    .map_err(|e| unavailable(e.to_string()))?
                    .map_err(|e| unavailable(e.to_string()))?
                }
            },
        };
        let path = if self.source == ModelSource::Default {
            let (model, original) = (model.clone(), path.clone());
            tokio::task::spawn_blocking(move || engine_file(&path, &model))
                .await
                .unwrap_or(original)
        } else {
            path
        };
        let config = (self.configure)(path);
        let backend = tokio::task::spawn_blocking(move || LocalBackend::start(config))
            .await
            .map_err(|e| unavailable(e.to_string()))?
            .map_err(|e| unavailable(e.to_string()))?;
        *self
            .started
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(backend.clone());
        Ok(backend)
    }
}

/// How far a fetch is, as the loading bar's fraction: downloading fills 0..0.9, verifying
/// 0.95 (loading the weights afterwards reports its own progress).
fn fetch_fraction(p: FetchProgress) -> Option<f32> {
    match p {
        FetchProgress::Trying(_) => Some(0.0),
        FetchProgress::Downloading { n, of } => Some(n as f32 / of.max(1) as f32 * 0.9),
        FetchProgress::Receiving {
            bytes,
            total: Some(total),
        } if total > 0 => Some(bytes as f32 / total as f32 * 0.9),
        FetchProgress::Receiving { .. } => None,
        FetchProgress::Verifying => Some(0.95),
    }
}

/// The file the engine runs for the default model `model` downloaded as `original`. The default
/// file mixes Q4_K and Q5_0 tensors, for which candle has slow CPU kernels; a Q8_0 copy made
/// once beside it (a few seconds) runs faster. Falls back to the original on failure. Blocks:
/// call from a blocking context. `hearth bench` measures this file, as the engine runs it.
pub fn engine_file(original: &std::path::Path, model: &str) -> PathBuf {
    let copy = original.with_file_name(format!("{model}-q8_0.gguf"));
    match crate::requant::q8_0_copy(original, &copy) {
        Ok(()) => copy,
        Err(err) => {
            tracing::warn!(
                "cannot make a Q8_0 copy of {}: {err}; using the original",
                original.display()
            );
            original.to_path_buf()
        }
    }
}

#[async_trait]
impl Backend for LazyLocalBackend {
    fn stream(&self, request: CompletionRequest, cancel: CancellationToken) -> EventStream {
        if let Some(backend) = self.running() {
            return backend.stream(request, cancel);
        }
        let (tx, rx) = mpsc::channel(64);
        let this = self.clone();
        tokio::spawn(async move {
            let started = tokio::select! {
                started = this.ensure(&tx) => started,
                () = cancel.cancelled() => return,
            };
            match started {
                Err(err) => {
                    let _ = tx.send(Err(err)).await;
                }
                Ok(backend) => {
                    let mut inner = backend.stream(request, cancel);
                    while let Some(event) = inner.next().await {
                        if tx.send(event).await.is_err() {
                            return; // The consumer went away; dropping `inner` stops the work.
                        }
                    }
                }
            }
        });
        Box::pin(futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|e| (e, rx))
        }))
    }

    async fn list_models(&self) -> Result<Vec<ModelInfo>, BackendError> {
        if let Some(backend) = self.running() {
            return backend.list_models().await;
        }
        let mut info = ModelInfo::new(self.model_id());
        if self.source == ModelSource::Default {
            info.quantization = Some(if cached_default_model().is_some() {
                "Q4_K_M".into()
            } else {
                "Q4_K_M, downloads on first use".into()
            });
        }
        Ok(vec![info])
    }

    /// Before the engine starts nothing is known yet (not even the tokenizer): the answer is
    /// not settled, so the agent asks again once the first prompt has started it.
    async fn describe(&self, model: &str) -> ModelDescription {
        match self.running() {
            Some(backend) => backend.describe(model).await,
            None => {
                // Not started yet: the window is read from the weights' header (or, before the
                // default model is fetched, known from it), so no caller has to guess.
                let lazy = self.clone();
                let window = tokio::task::spawn_blocking(move || lazy.window_before_start())
                    .await
                    .ok()
                    .flatten();
                ModelDescription {
                    window: window.map(|w| (w, WindowSource::Listed)),
                    server: ServerKind::Engine,
                    settled: false,
                    ..ModelDescription::unknown()
                }
            }
        }
    }

    fn count_tokens(&self, model: &str, text: &str) -> Option<usize> {
        self.running()?.count_tokens(model, text)
    }
}

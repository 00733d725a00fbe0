//! [`LazyLocalBackend`]: the local engine started on first use, fetching the default model
//! first when it is not cached, so `hearth` starts instantly and the editor is told what is
//! happening while the weights arrive and load.

use std::path::{Path, PathBuf};
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
use crate::device::DeviceChoice;
use crate::engine::EngineConfig;
use crate::fetch::{
    DEFAULT_MODEL_CONTEXT, DEFAULT_MODEL_ID, FetchProgress, cached_default_model,
    fetch_default_model,
};
use crate::model::{GgufFile, ModelFiles};

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
            let device = (self.configure)(path.clone()).device;
            tokio::task::spawn_blocking(move || engine_file(&path, &model, device))
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

/// The file the engine runs for the default model `model` downloaded as `original`, on the
/// device `device` opens. Blocks: call from a blocking context. `hearth bench` measures this
/// file, as the engine runs it.
///
/// Where that is the CPU and hearth's packed kernels serve every matrix of the file (the
/// download's Q5_0, Q8_0, Q4_K and Q6_K, on any x86 CPU with AVX2), the download itself. On a
/// 2-core Intel Xeon VM (AVX-512 VNNI) its Q8_0 copy decoded at 45.1 tok/s at depth 0 and
/// 39.6 at 4k, the download at 57.7 and 46.9, in 138 MiB less memory; it read prompts 12–15%
/// slower there (426 against 483 tok/s at depth 0), and 6–14% faster on the AVX2 kernels
/// (`hearth bench`, in turn). `hearth eval` finished as many tasks on either (115 and 117 of
/// 195 task runs over five temperatures). It is also the file as published, as llama.cpp runs
/// it, where the copy had rounded every weight a second time.
///
/// Elsewhere (no AVX2, another architecture, a GPU) candle serves the weights: on the CPU it
/// runs Q8_0 about three times faster than the download's Q5_0, and a GPU was not measured
/// either way. There a Q8_0 copy is made once beside the download (a few seconds) and run
/// instead, or the original where the copy cannot be made.
pub fn engine_file(original: &Path, model: &str, device: DeviceChoice) -> PathBuf {
    if crate::device::opens_cpu(device)
        && GgufFile::open(original).is_ok_and(|file| file.packs_whole_on_this_cpu())
    {
        return original.to_path_buf();
    }
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

#[cfg(test)]
mod tests {
    use candle_core::quantized::GgmlDType;

    use super::*;
    use crate::model::tiny::{self, TinySpec};

    /// A file whose every matrix the CPU's packed kernels serve runs as downloaded, with no
    /// copy made; one they do not serve (f32 weights here), or one bound for a GPU, runs as
    /// the Q8_0 copy made beside it.
    #[test]
    fn the_engine_runs_the_download_where_the_packed_kernels_serve_it() {
        let dir = tempfile::tempdir().unwrap();
        let packed = tiny::write(&TinySpec::qwen2(), dir.path(), "packed");
        let copy_of = |name: &str| dir.path().join(format!("{name}-q8_0.gguf"));
        let runs = engine_file(&packed, "packed", DeviceChoice::Cpu);
        if hearth_kernels::Isa::detect().is_some() {
            assert_eq!(runs, packed);
            assert!(!copy_of("packed").exists(), "no copy is made");
        } else {
            assert_eq!(runs, copy_of("packed"));
        }
        assert_eq!(
            engine_file(&packed, "packed", DeviceChoice::Cuda(0)),
            copy_of("packed"),
            "a GPU runs candle's kernels, on the copy"
        );

        let f32_spec = TinySpec {
            weights: GgmlDType::F32,
            ..TinySpec::qwen2()
        };
        let wide = tiny::write(&f32_spec, dir.path(), "wide");
        assert_eq!(
            engine_file(&wide, "wide", DeviceChoice::Cpu),
            copy_of("wide")
        );
        let copy = GgufFile::open(&copy_of("wide")).unwrap();
        assert_eq!(
            copy.content.tensor_infos["blk.0.attn_q.weight"].ggml_dtype,
            GgmlDType::Q8_0
        );
    }
}

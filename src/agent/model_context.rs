//! What the agent knows about each model's context: its window (discovered once) and how to
//! count its tokens (the real tokenizer where there is one, else an estimate calibrated against
//! what the server reports). Shared by every session: calibration is per endpoint and model.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hearth_backend::Backend;

use super::catalog::{Endpoint, ModelRef};
use crate::context::{
    Budget, CalibratedEstimator, TokenCounter, TokenizerCounter, WindowInfo, WindowSource,
    discover_window, window_without_server,
};
use crate::sync::lock;

/// Probes of a server's window must not hold up a turn for long.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// Answer tokens reserved when the endpoint sets no `max_tokens`: a quarter of the window,
/// between 1k and 8k tokens.
pub fn default_max_tokens(window: u32) -> u32 {
    (window / 4).clamp(1024, 8192).min(window / 2)
}

/// The per-model context knowledge of every session.
pub struct ModelContexts {
    http: reqwest::Client,
    models: Mutex<HashMap<ModelRef, Arc<ModelContext>>>,
}

impl Default for ModelContexts {
    fn default() -> Self {
        Self::new()
    }
}

impl ModelContexts {
    pub fn new() -> Self {
        let http = reqwest::Client::builder()
            .timeout(PROBE_TIMEOUT)
            .connect_timeout(PROBE_TIMEOUT)
            .build()
            .unwrap_or_default();
        Self {
            http,
            models: Mutex::new(HashMap::new()),
        }
    }

    /// The context of `model` on `endpoint`, discovering its window the first time.
    ///
    pub async fn get(&self, endpoint: &Endpoint, model: &ModelRef) -> Arc<ModelContext> {
        if let Some(known) = lock(&self.models).get(model) {
            return known.clone();
        }
        let listed = match endpoint.backend.context_window(&model.model).await {
            Ok(window) => window,
            Err(err) => {
                tracing::debug!(endpoint = %endpoint.config.name, "listing the window failed: {err}");
                None
            }
        };
        let is_local = endpoint.config.name == crate::config::LOCAL_ENDPOINT;
        let window = if is_local {
            window_without_server(endpoint.config.context_window, listed)
        } else {
            discover_window(&self.http, &endpoint.config, &model.model, listed).await
        };
        let context = Arc::new(ModelContext::new(window, endpoint.config.tokenizer.clone()));
        // The engine reports its window once loaded, so its default is asked again; a server
        // is asked once per process.
        if window.source != WindowSource::Default || !is_local {
            lock(&self.models).insert(model.clone(), context.clone());
        }
        context
    }
}

/// One model's window and token accounting.
pub struct ModelContext {
    pub window: WindowInfo,
    tokenizer: Option<TokenizerCounter>,
    estimator: Mutex<CalibratedEstimator>,
}

impl ModelContext {
    pub fn new(window: WindowInfo, tokenizer: Option<PathBuf>) -> Self {
        let tokenizer = tokenizer.and_then(|path| match TokenizerCounter::from_file(&path) {
            Ok(counter) => Some(counter),
            Err(err) => {
                tracing::warn!("{err}; estimating tokens instead");
                None
            }
        });
        Self {
            window,
            tokenizer,
            estimator: Mutex::new(CalibratedEstimator::default()),
        }
    }

    /// The budget of one request with `max_tokens` configured (or the default reserve).
    pub fn budget(&self, max_tokens: Option<u32>) -> Budget {
        let window = self.window.tokens;
        let reserve = max_tokens
            .filter(|t| *t > 0)
            .unwrap_or_else(|| default_max_tokens(window))
            .min(window / 2);
        Budget::new(window, reserve)
    }

    /// A counter for `model` on `backend`: the configured tokenizer, else the backend's own
    /// (the local engine), else the calibrated estimate.
    pub fn counter<'a>(&'a self, backend: &'a dyn Backend, model: &'a str) -> ModelCounter<'a> {
        ModelCounter {
            context: self,
            backend,
            model,
        }
    }

    /// Whether counts come from an estimate (and so learn from the server's counts).
    pub fn estimates(&self, backend: &dyn Backend, model: &str) -> bool {
        self.tokenizer.is_none() && backend.count_tokens(model, "x").is_none()
    }

    /// Learns from the server's `prompt_tokens` for a prompt estimated at `estimated`.
    pub fn calibrate(&self, estimated: usize, reported: u32) {
        lock(&self.estimator).calibrate(estimated, reported);
    }

    /// Learns from a prompt the server rejected as too long.
    pub fn record_overflow(&self) {
        lock(&self.estimator).record_overflow();
    }
}

/// Counts tokens for one model, the best way available.
pub struct ModelCounter<'a> {
    context: &'a ModelContext,
    backend: &'a dyn Backend,
    model: &'a str,
}

impl TokenCounter for ModelCounter<'_> {
    fn count(&self, text: &str) -> usize {
        if let Some(tokenizer) = &self.context.tokenizer {
            return tokenizer.count(text);
        }
        if let Some(tokens) = self.backend.count_tokens(self.model, text) {
            return tokens;
        }
        lock(&self.context.estimator).count(text)
    }

    fn image_tokens(&self) -> usize {
        lock(&self.context.estimator).image_tokens()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::ServerKind;

    fn window(tokens: u32) -> WindowInfo {
        WindowInfo {
            tokens,
            source: WindowSource::Config,
            server: ServerKind::Unknown,
        }
    }

    #[test]
    fn the_answer_reserve_scales_with_the_window_and_never_takes_half() {
        assert_eq!(default_max_tokens(32_768), 8192);
        assert_eq!(default_max_tokens(8192), 2048);
        assert_eq!(default_max_tokens(2048), 1024);
        assert_eq!(default_max_tokens(1024), 512);
        let context = ModelContext::new(window(4096), None);
        assert_eq!(context.budget(Some(100_000)).max_tokens, 2048);
        assert_eq!(context.budget(Some(512)).max_tokens, 512);
        assert_eq!(context.budget(None).max_tokens, 1024);
    }

    #[test]
    fn estimates_learn_from_the_server() {
        let context = ModelContext::new(window(8192), None);
        let backend = hearth_testkit_free_backend();
        let counter = context.counter(&backend, "m");
        let text = "word ".repeat(400);
        let before = counter.count(&text);
        assert!(context.estimates(&backend, "m"));
        context.calibrate(before, u32::try_from(before * 2).unwrap());
        let counter = context.counter(&backend, "m");
        assert!(counter.count(&text) >= before * 2);
    }

    /// A backend with no tokenizer and no models: counting falls to the estimate.
    fn hearth_testkit_free_backend() -> NoTokenizer {
        NoTokenizer
    }

    struct NoTokenizer;

    #[async_trait::async_trait]
    impl Backend for NoTokenizer {
        fn stream(
            &self,
            _request: hearth_backend::CompletionRequest,
            _cancel: tokio_util::sync::CancellationToken,
        ) -> hearth_backend::EventStream {
            Box::pin(futures::stream::empty())
        }

        async fn list_models(
            &self,
        ) -> Result<Vec<hearth_backend::ModelInfo>, hearth_backend::BackendError> {
            Ok(Vec::new())
        }
    }
}

//! What the agent knows about each model's context: its window (as its backend describes it,
//! once) and how to count its tokens (the real tokenizer where there is one, else an estimate
//! calibrated against what the server reports). Shared by every session: calibration is per
//! endpoint and model.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use hearth_backend::{Backend, CompletionRequest, ContentPart};
use hearth_conversation::ModelRef;

use super::catalog::Endpoint;
use crate::context::{
    Budget, CalibratedEstimator, TextProfile, TokenCounter, TokenizerCounter, WindowInfo,
    choose_window,
};
use crate::parse::{ThinkStart, think_start_for};
use crate::sync::lock;

/// Answer tokens reserved when the endpoint sets no `max_tokens`: a quarter of the window,
/// between 1k and 8k tokens.
pub fn default_max_tokens(window: u32) -> u32 {
    (window / 4).clamp(1024, 8192).min(window / 2)
}

/// The per-model context knowledge of every session.
#[derive(Default)]
pub struct ModelContexts {
    models: Mutex<HashMap<ModelRef, Arc<ModelContext>>>,
}

impl ModelContexts {
    pub fn new() -> Self {
        Self::default()
    }

    /// The context of `model` on `endpoint`, asking its backend to describe it the first time
    /// (and again while the backend's answer is not settled: an engine that has not started).
    pub async fn get(&self, endpoint: &Endpoint, model: &ModelRef) -> Arc<ModelContext> {
        if let Some(known) = lock(&self.models).get(model) {
            return known.clone();
        }
        let described = endpoint.backend.describe(&model.model).await;
        let window = choose_window(endpoint.config.context_window, &described);
        tracing::info!(
            endpoint = %endpoint.config.name,
            model = %model.model,
            tokens = window.tokens,
            source = ?window.source,
            server = ?window.server,
            "context window"
        );
        let context = Arc::new(
            ModelContext::new(window, endpoint.config.tokenizer.clone())
                .with_exact_counts(described.exact_token_counts)
                .with_reasoning_start(described.opens_in_reasoning),
        );
        if described.settled {
            lock(&self.models).insert(model.clone(), context.clone());
        }
        context
    }
}

/// One model's window and token accounting.
pub struct ModelContext {
    pub window: WindowInfo,
    tokenizer: Option<TokenizerCounter>,
    /// The backend counts this model's tokens exactly (it has the tokenizer).
    backend_counts: bool,
    /// What the server said of the model's template: whether answers start inside
    /// `<think>`. `None` leaves it to the model's name.
    opens_in_reasoning: Option<bool>,
    /// A smaller window the server stated when it rejected a prompt: it wins from then on.
    stated_window: Mutex<Option<u32>>,
    estimator: Mutex<CalibratedEstimator>,
    /// With exact counts: what the server's template added beyond them, lately.
    unseen: Mutex<UnseenTokens>,
}

/// Tokens an exact count cannot see (the server's template around messages and tools), kept
/// from the last few prompts: the budget leaves the largest of them, and a little more, free.
#[derive(Debug, Default)]
struct UnseenTokens {
    recent: std::collections::VecDeque<usize>,
}

impl UnseenTokens {
    const RECENT: usize = 8;
    /// Kept on top of the largest excess seen, for what changes between prompts.
    const SLACK: usize = 16;

    fn observe(&mut self, excess: usize) {
        if self.recent.len() == Self::RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back(excess);
    }

    fn reserve(&self) -> u32 {
        let worst = self.recent.iter().copied().max().unwrap_or(0);
        if worst == 0 {
            return 0;
        }
        u32::try_from(worst + Self::SLACK).unwrap_or(u32::MAX)
    }
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
            backend_counts: false,
            opens_in_reasoning: None,
            stated_window: Mutex::new(None),
            estimator: Mutex::new(CalibratedEstimator::default()),
            unseen: Mutex::new(UnseenTokens::default()),
        }
    }

    /// Counts with the backend's own tokenizer, as its description said it can.
    pub fn with_exact_counts(mut self, backend_counts: bool) -> Self {
        self.backend_counts = backend_counts;
        self
    }

    /// Starts answers inside `<think>` (or not) as the server's template says.
    pub fn with_reasoning_start(mut self, opens: Option<bool>) -> Self {
        self.opens_in_reasoning = opens;
        self
    }

    /// Where this model's answers start: what the server's template says, else what the
    /// model's name says (QwQ, R1 distills and the like pre-fill `<think>`).
    pub fn think_start(&self, model: &str) -> ThinkStart {
        match self.opens_in_reasoning {
            Some(true) => ThinkStart::Open,
            Some(false) => ThinkStart::Closed,
            None => think_start_for(model),
        }
    }

    /// The budget of one request with `max_tokens` configured (or the default reserve), less
    /// what the server's template has lately added beyond an exact count.
    pub fn budget(&self, max_tokens: Option<u32>) -> Budget {
        let window = self.window_tokens();
        let reserve = max_tokens
            .filter(|t| *t > 0)
            .unwrap_or_else(|| default_max_tokens(window))
            .min(window / 2);
        Budget::new(window, reserve).tightened(lock(&self.unseen).reserve())
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
    pub fn estimates(&self) -> bool {
        self.tokenizer.is_none() && !self.backend_counts
    }

    /// Learns from the server's `prompt_tokens` for a request of text `profile` that hearth
    /// counted as `estimated`: an estimate learns the price of each kind of character, an exact
    /// count what the template adds beyond it (the profile is unused then).
    pub fn observe(&self, profile: &TextProfile, estimated: usize, reported: u32) {
        if reported == 0 {
            return;
        }
        if !self.estimates() {
            let excess = (reported as usize).saturating_sub(estimated);
            lock(&self.unseen).observe(excess);
            return;
        }
        let mut estimator = lock(&self.estimator);
        // What the caller counted beyond the texts: the template's tokens as it assumes them.
        let structure = estimated.saturating_sub(estimator.text_tokens(profile).round() as usize);
        estimator.calibrate(profile, structure, reported);
    }

    /// The window requests are fitted to: the one found out, or a smaller one the server
    /// stated since.
    pub fn window_tokens(&self) -> u32 {
        let stated = *lock(&self.stated_window);
        stated.map_or(self.window.tokens, |w| w.min(self.window.tokens))
    }

    /// Learns from a request of text `profile` that the server rejected as too long, `estimated`
    /// by our count. Where the server `reported` the prompt's size in its own tokens, that is learnt as
    /// any usage is (an estimate widens its margin by the miss); without a size, an estimate
    /// counts 15% more. A stated window smaller than the one assumed replaces it for every
    /// later request. Returns whether the server's count was learnt.
    pub fn record_overflow(
        &self,
        profile: &TextProfile,
        estimated: usize,
        reported: Option<u32>,
        window: Option<u32>,
    ) -> bool {
        if let Some(window) = window.filter(|w| *w < self.window.tokens) {
            tracing::warn!(
                assumed = self.window.tokens,
                stated = window,
                "the server's window is smaller than assumed; fitting to its own from now on"
            );
            *lock(&self.stated_window) = Some(window);
        }
        match reported {
            Some(reported) => self.observe(profile, estimated, reported),
            None if self.estimates() => lock(&self.estimator).record_overflow(),
            None => {}
        }
        reported.is_some()
    }
}

/// The character profile of everything `request` sends as text: message contents, reasoning
/// sent back, tool calls, and the native tool list.
pub fn request_profile(request: &CompletionRequest) -> TextProfile {
    let mut profile = TextProfile::default();
    for message in &request.messages {
        for part in &message.content {
            if let ContentPart::Text { text } = part {
                profile.add(text);
            }
        }
        if let Some(reasoning) = &message.reasoning {
            profile.add(reasoning);
        }
        for call in &message.tool_calls {
            profile.add(&call.name);
            profile.add(&call.arguments);
        }
    }
    for tool in &request.tools {
        profile.add(&serde_json::to_string(tool).unwrap_or_default());
    }
    profile
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
        if self.context.backend_counts
            && let Some(tokens) = self.backend.count_tokens(self.model, text)
        {
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
    use hearth_backend::{ServerKind, WindowSource};

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
        assert!(context.estimates());
        context.observe(
            &TextProfile::of(&text),
            before,
            u32::try_from(before * 2).unwrap(),
        );
        let counter = context.counter(&backend, "m");
        assert!(counter.count(&text) >= before * 2);
    }

    /// After a rejection that states the prompt's size and a smaller window, the same prompt
    /// counts at least what the server counted, and budgets use the server's window.
    #[test]
    fn a_stated_rejection_teaches_the_count_and_the_window() {
        let backend = hearth_testkit_free_backend();
        let context = ModelContext::new(window(8192), None);
        let text = "fn main() { println!(\"{}\", 1 + 2); }\n".repeat(200);
        let estimated = context.counter(&backend, "m").count(&text);
        let reported = u32::try_from(estimated * 3).unwrap();
        let profile = TextProfile::of(&text);
        context.record_overflow(&profile, estimated, Some(reported), Some(4096));
        assert!(context.counter(&backend, "m").count(&text) >= reported as usize);
        assert_eq!(context.window_tokens(), 4096);
        assert_eq!(context.budget(None).window, 4096);
        // A larger stated window never widens the one assumed.
        context.record_overflow(&profile, estimated, None, Some(65_536));
        assert_eq!(context.window_tokens(), 4096);
    }

    #[test]
    fn the_backends_own_counts_are_used_only_when_it_said_they_are_exact() {
        let backend = hearth_testkit_free_backend();
        let exact = ModelContext::new(window(8192), None).with_exact_counts(true);
        assert!(!exact.estimates());
        assert_eq!(exact.counter(&backend, "m").count("known"), 3);
        let estimated = ModelContext::new(window(8192), None);
        assert!(estimated.estimates());
        assert_ne!(estimated.counter(&backend, "m").count("known"), 3);
    }

    /// A backend with no models whose tokenizer knows only the word "known" (3 tokens):
    /// counting falls to the estimate unless the context says the backend counts exactly.
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

        fn count_tokens(&self, _model: &str, text: &str) -> Option<usize> {
            (text == "known").then_some(3)
        }
    }
}

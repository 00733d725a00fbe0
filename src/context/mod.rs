//! Context that always fits: the window's size, token accounting, the per-request projection
//! of the history into the budget, summarising compaction, and the `/context` report.
//!
//! How a turn loop uses it, per session and per round:
//!
//! 1. Once per model: `info = choose_window(configured, &backend.describe(model).await)`, and
//!    `budget = Budget::new(info.tokens, max_tokens)`. Every request for the model carries
//!    `request.context_window = Some(info.tokens)`; the backend decides whether its server
//!    takes it (Ollama's `num_ctx`).
//! 2. A counter: [`TokenizerCounter`] where a `tokenizer.json` is configured, the backend's
//!    own count where it has the tokenizer (the local engine), else one [`CalibratedEstimator`]
//!    per endpoint and model (the agent's `ModelCounter` picks).
//! 3. Each round: `p = project(&history, counter.count(system_prompt_with_tools), &budget,
//!    &counter, summary.as_ref())`; render `p.entries` instead of the history. The stored
//!    history is never changed.
//! 4. After the round: `estimator.calibrate(&TextProfile of the request, structure,
//!    usage.prompt_tokens)`, and the usage meter shows `p.tokens` (or the server's count)
//!    against `budget.window`. On a context-length error that states the prompt's size, the
//!    same with that size; without one, `estimator.record_overflow()`; then retry once.
//! 5. Compaction: when `should_compact(p.unelided_tokens, budget.window, threshold)` and
//!    `compaction_span(&history, &p, summary.as_ref())` is `Some(covers)` (or on `/compact`,
//!    `on_demand_span`), send `build_summary_request(&history[..covers], summary.as_ref(),
//!    focus, &budget, &counter)` with `max_tokens = budget.max_tokens`, and keep
//!    `Summary { covers, text }` beside the history. If that call fails, keep the old summary:
//!    projection alone still fits.
//! 6. `/context`: `describe(&p, &budget)` and print it.

mod compaction;
mod cuts;
mod error;
mod estimator;
mod markers;
mod projection;
mod report;
mod slots;
mod squeeze;
mod summary;
mod tokens;
mod window;

pub use compaction::{
    COMPACT_PROMPT, DEFAULT_COMPACT_THRESHOLD, build_summary_request, compaction_span,
    on_demand_span, should_compact,
};
pub use error::ContextError;
pub use estimator::{CalibratedEstimator, DEFAULT_CHARS_PER_TOKEN, TextProfile};
pub use markers::{SUMMARY_ACK, SUMMARY_PREFIX};
pub use projection::{Projection, project};
pub use report::{ContextReport, ElidedCount, describe};
pub use slots::{Elision, ElisionKind};
pub use summary::Summary;
pub use tokens::{
    Budget, DEFAULT_IMAGE_TOKENS, MESSAGE_OVERHEAD, TokenCounter, TokenizerCounter, content_tokens,
    entry_tokens, history_tokens,
};
pub use window::{DEFAULT_WINDOW, WindowInfo, choose_window};

#[cfg(test)]
mod figures_tests;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod test_tokenizer;

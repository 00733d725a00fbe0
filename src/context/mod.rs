//! Context that always fits: the window's size, token accounting, the per-request projection
//! of the history into the budget, summarising compaction, and the `/context` report.

mod compaction;
mod discovery;
mod error;
mod estimator;
mod markers;
mod plan;
mod probes;
mod projection;
mod report;
mod squeeze;
mod tokens;

pub use compaction::{
    COMPACT_PROMPT, DEFAULT_COMPACT_THRESHOLD, Summary, build_summary_request, compaction_span,
    on_demand_span, should_compact,
};
pub use discovery::{
    DEFAULT_WINDOW, ServerKind, WindowInfo, WindowSource, discover_window, ollama_num_ctx,
    window_without_server,
};
pub use error::ContextError;
pub use estimator::{CalibratedEstimator, DEFAULT_CHARS_PER_TOKEN};
pub use markers::{SUMMARY_ACK, SUMMARY_PREFIX};
pub use projection::{Elision, ElisionKind, Projection, project};
pub use report::{ContextReport, ElidedCount, describe};
pub use tokens::{
    Budget, DEFAULT_IMAGE_TOKENS, MESSAGE_OVERHEAD, TokenCounter, TokenizerCounter, content_tokens,
    entry_tokens, history_tokens,
};

#[cfg(test)]
mod figures_tests;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod test_tokenizer;

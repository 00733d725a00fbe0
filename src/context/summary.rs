//! A compaction summary, as the session keeps it beside the history.

use serde::{Deserialize, Serialize};

/// A compaction summary: it stands in for the first `covers` entries of the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// How many history entries, from the start, the summary covers.
    pub covers: usize,
    /// The model's summary.
    pub text: String,
}

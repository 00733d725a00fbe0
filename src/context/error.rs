//! Errors of the context module.

use std::path::PathBuf;

/// What can go wrong while setting up context accounting. Discovery and projection never fail:
/// they fall back to safer choices and say so in the log.
#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    /// A configured `tokenizer.json` could not be loaded. The caller logs it and counts with
    /// the calibrated estimate instead.
    #[error("cannot load tokenizer {}: {message}", path.display())]
    Tokenizer { path: PathBuf, message: String },
}

//! What loading a damaged session file reports: each problem, where it was, and what was done
//! about it. The rest of the session still loads.

use std::path::PathBuf;

use super::blob::BlobHash;

/// Something wrong with one line that did not stop the load.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}: {problem}", file.display())]
pub struct LoadWarning {
    pub file: PathBuf,
    /// 1-based.
    pub line: usize,
    pub problem: LoadProblem,
}

/// What was wrong with a line, and what loading did about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadProblem {
    /// The last line is incomplete (the writer died mid-record); it was skipped.
    #[error("incomplete last record skipped (the writer stopped mid-record)")]
    TornLastRecord,
    /// A line that is not a record this hearth can read; it was skipped.
    #[error("unreadable record skipped: {0}")]
    Corrupt(String),
    /// A second header after line 1; it was skipped.
    #[error("unexpected header record skipped")]
    ExtraHeader,
    /// The header names another session than the file name (a copied file); the file name wins.
    #[error("header names session {header_id}, the file name another; using the file name")]
    IdMismatch { header_id: String },
    /// An image's blob is gone; the image was replaced by a text placeholder.
    #[error("image blob {0} is missing")]
    MissingBlob(BlobHash),
    /// An image's blob could not be read; the image was replaced by a text placeholder.
    #[error("image blob {sha256} cannot be read: {message}")]
    UnreadableBlob { sha256: BlobHash, message: String },
}

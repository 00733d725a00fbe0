//! The model cache directory and what is in it.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::EngineError;

/// File name of the default model in the cache (the hub's file name too).
pub const DEFAULT_MODEL_FILE: &str = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";
/// The id the default model is listed under.
pub const DEFAULT_MODEL_ID: &str = "qwen2.5-coder-0.5b-instruct";
/// sha256 of the default model file.
pub const DEFAULT_MODEL_SHA256: &str =
    "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32";
/// Size of the default model file in bytes.
pub const DEFAULT_MODEL_BYTES: u64 = 491_400_064;
/// The default model's trained window (`qwen2.context_length` in its GGUF header), for
/// describing it before it is fetched.
pub const DEFAULT_MODEL_CONTEXT: usize = 32_768;

/// `$XDG_CACHE_HOME/hearth/models` (or the platform's cache directory).
pub fn models_dir() -> Result<PathBuf, EngineError> {
    dirs::cache_dir()
        .map(|d| d.join("hearth").join("models"))
        .ok_or_else(|| EngineError::Fetch("no cache directory on this system".into()))
}

/// `$XDG_CACHE_HOME/hearth/prefixes`: saved system turns (`engine/prefix_store.rs`).
pub fn prefixes_dir() -> Result<PathBuf, EngineError> {
    models_dir().map(|models| models.with_file_name("prefixes"))
}

/// The default model's path if it is already cached (size checked, not the hash: hashing
/// 490 MB on every start costs a second or two; [`super::fetch_default_model`] hashes).
pub fn cached_default_model() -> Option<PathBuf> {
    let path = models_dir().ok()?.join(DEFAULT_MODEL_FILE);
    let len = std::fs::metadata(&path).ok()?.len();
    (len == DEFAULT_MODEL_BYTES).then_some(path)
}

/// GGUF files in the models directory with their sizes, sorted by name (`hearth model list`).
pub fn list_cached_models() -> Result<Vec<(PathBuf, u64)>, EngineError> {
    let dir = models_dir()?;
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "gguf") {
            out.push((path.clone(), std::fs::metadata(&path)?.len()));
        }
    }
    out.sort();
    Ok(out)
}

/// The lowercase hex sha256 of a file.
pub fn sha256_file(path: &Path) -> Result<String, EngineError> {
    let mut reader = BufReader::with_capacity(1 << 20, File::open(path)?);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

/// Lowercase hex of a digest.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

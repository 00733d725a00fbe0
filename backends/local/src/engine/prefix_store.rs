//! System turns' keys and values kept on disk, so that a new session — a new `hearth run`, a
//! new thread in the editor, the REPL started again — does not read the agent's system prompt
//! and tool list from scratch. That prompt is the same in every session of a project and is
//! most of a first request (about 1,400 of its first 1,450 tokens); read on two cores it
//! costs seconds before the first token, every time.
//!
//! Only the system turn is saved (up to its `<|im_end|>`): nothing the user or a tool wrote.
//! An entry is named by the sha256 of its tokens and lies in a directory of the model
//! *identity* it was computed with: the model file (path, length, modification time), the
//! build of hearth that read it, the kernels it ran and the model's shape, so a file from
//! another model or build is never read into this one. A new session takes the saved turn that
//! shares the most tokens with its own, for those tokens only: another project's turn differs
//! in its last line alone. Everything on disk is untrusted: a file is read only if it is a
//! regular file of exactly the length its header gives for this model, and used only if its
//! identity and checksum match; a damaged one is removed, and the prompt is read as usual. The
//! store keeps to a byte budget, the least recently used entries going first, and a failure to
//! read or write it never fails a request.

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};
use tracing::{debug, info, warn};

use super::pool::{Sequence, common_prefix};
use super::prefix_file::{self, Element, FileShape, HEADER_BYTES, VERSION};
use crate::error::EngineError;
use crate::fetch::hex;
use crate::model::{KvCache, Model};
use crate::tokenizer::TextTokenizer;

/// Bytes all models' saved prefixes may take together. The 0.5B's system turn of ~1,400
/// tokens is 17 MiB; a 7B's is about five times that.
pub const DEFAULT_BUDGET_BYTES: u64 = 512 << 20;
/// A system turn shorter than this reads in well under a second: not worth a file.
pub(crate) const MIN_TOKENS: usize = 64;
/// Files the eviction walk looks at, at most: the store is never this large by itself.
const MAX_WALK: usize = 4096;
/// A write that died part-way leaves a `.partial-*` file; one this old is swept away.
const STALE_PARTIAL: Duration = Duration::from_secs(3600);
const PARTIAL_PREFIX: &str = ".partial-";
const EXTENSION: &str = "kv";

/// The saved system turns of one loaded model.
pub(crate) struct PrefixStore {
    /// Every model's entries, one directory per identity.
    root: PathBuf,
    /// This model's.
    dir: PathBuf,
    identity: [u8; 32],
    budget: u64,
    /// Turns this process saved, or read (whole, or all but a few tokens): not written again.
    known: HashSet<String>,
    /// `<|im_start|>system\n` as tokens, and `<|im_end|>`.
    opening: Vec<u32>,
    end: u32,
}

impl PrefixStore {
    /// The store under `root` for `model`, read from `model_path`. `None` (and why, logged)
    /// where it cannot work: a cache off the CPU, or a tokenizer without ChatML's tokens.
    pub(crate) fn open(
        root: &Path,
        model_path: &Path,
        model: &Model,
        tokenizer: &TextTokenizer,
        budget: u64,
    ) -> Option<Self> {
        if !model.device().is_cpu() {
            debug!("prefix store: only caches on the CPU are saved");
            return None;
        }
        let (opening, end) = match (
            tokenizer.encode("<|im_start|>system\n"),
            tokenizer.encode("<|im_end|>").as_deref(),
        ) {
            (Ok(opening), Ok(&[end])) if !opening.is_empty() => (opening, end),
            _ => {
                debug!("prefix store: the tokenizer has no ChatML turns");
                return None;
            }
        };
        let identity = match identity(model_path, model) {
            Ok(identity) => identity,
            Err(err) => {
                warn!(%err, "prefix store: cannot identify the model file; not saving prefixes");
                return None;
            }
        };
        let dir = root.join(hex(&identity[..8]));
        Some(Self {
            root: root.to_path_buf(),
            dir,
            identity,
            budget,
            known: HashSet::new(),
            opening,
            end,
        })
    }

    /// Where `prompt`'s system turn ends (just past its `<|im_end|>`), when it opens with one
    /// worth saving and something follows it.
    pub(crate) fn system_turn(&self, prompt: &[u32]) -> Option<usize> {
        let body = prompt.strip_prefix(self.opening.as_slice())?;
        let end = self.opening.len() + body.iter().position(|&t| t == self.end)? + 1;
        (MIN_TOKENS..prompt.len()).contains(&end).then_some(end)
    }

    /// A sequence holding more of `prompt`'s system turn (`prompt[..turn]`) than `better_than`
    /// tokens, read from disk into `cache` (made room for `room` more tokens): the first
    /// tokens of the saved turn that shares the most with it. Another project's turn differs
    /// from this one only in its last line (the project's path), so a first session in a new
    /// project reads all but that from disk too. `None` when nothing saved shares
    /// [`MIN_TOKENS`], after removing a file found unsound.
    pub(crate) fn load(
        &mut self,
        prompt: &[u32],
        turn: usize,
        better_than: usize,
        mut cache: KvCache,
        room: usize,
    ) -> Option<Sequence> {
        let wanted = &prompt[..turn];
        let shape = self.shape(&cache, 0)?;
        let (path, tokens) = self.best_entry(wanted, shape, cache.max_len(), better_than)?;
        let shape = FileShape { tokens, ..shape };
        let bytes = match read_regular(&path, shape.file_bytes()) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return None,
            Err(err) => {
                warn!(path = %path.display(), %err, "prefix store: unreadable entry");
                return None;
            }
        };
        let (saved, layers) = match prefix_file::decode(&bytes, &self.identity, shape) {
            Ok(Ok(decoded)) => decoded,
            Ok(Err(refusal)) => {
                warn!(path = %path.display(), %refusal, "prefix store: entry refused and removed");
                let _ = fs::remove_file(&path);
                return None;
            }
            Err(err) => {
                warn!(path = %path.display(), %err, "prefix store: entry unusable");
                return None;
            }
        };
        // Read again from the checked bytes: the file may have changed since the scan.
        let shared = common_prefix(&saved, wanted);
        if shared < MIN_TOKENS || shared <= better_than {
            return None;
        }
        let filled = (|| -> Result<(), EngineError> {
            cache.reserve_with_room(shared, room)?;
            for (layer, (k, v)) in layers.iter().enumerate() {
                cache.write(layer, &k.narrow(2, 0, shared)?, &v.narrow(2, 0, shared)?)?;
            }
            cache.commit(shared);
            Ok(())
        })();
        if let Err(err) = filled {
            warn!(%err, "prefix store: could not fill a cache from an entry");
            return None;
        }
        touch(&path);
        // Nearly the whole turn came from disk (another project's, but for its path): a file
        // of its own would save a fraction of a second per session for 17 MiB a project, and
        // a run of `hearth eval`, one directory per task, would push the user's entries out.
        if turn - shared < MIN_TOKENS {
            self.known.insert(entry_name(wanted));
        }
        info!(
            tokens = shared,
            of = turn,
            "prefix store: system turn read from disk"
        );
        Some(Sequence {
            tokens: wanted[..shared].to_vec(),
            cache,
        })
    }

    /// The entry of this model whose tokens share the most with `wanted`, more than
    /// `better_than` and at least [`MIN_TOKENS`], and its token count. Only headers and
    /// tokens are read, from at most [`MAX_WALK`] regular files.
    fn best_entry(
        &self,
        wanted: &[u32],
        shape: FileShape,
        max_tokens: usize,
        better_than: usize,
    ) -> Option<(PathBuf, usize)> {
        let mut best: Option<(PathBuf, usize, usize)> = None;
        for entry in fs::read_dir(&self.dir).ok()?.flatten().take(MAX_WALK) {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != EXTENSION) {
                continue;
            }
            let tokens = match read_tokens(&path, &self.identity, shape, max_tokens) {
                Ok(Some(tokens)) => tokens,
                Ok(None) => {
                    // In this identity's directory, under an entry's name, yet not an entry
                    // of it: damaged.
                    warn!(path = %path.display(), "prefix store: damaged entry removed");
                    let _ = fs::remove_file(&path);
                    continue;
                }
                Err(err) => {
                    debug!(path = %path.display(), %err, "prefix store: entry skipped");
                    continue;
                }
            };
            let shared = common_prefix(&tokens, wanted);
            if shared >= MIN_TOKENS
                && shared > better_than
                && best.as_ref().is_none_or(|(_, _, most)| shared > *most)
            {
                best = Some((path, tokens.len(), shared));
            }
        }
        best.map(|(path, tokens, _)| (path, tokens))
    }

    /// Saves `seq`'s first `turn` tokens (a system turn, [`Self::system_turn`]) unless they
    /// are saved already or were read from disk but for a few tokens, then keeps the store to
    /// its budget. Failures are logged only.
    pub(crate) fn save(&mut self, seq: &Sequence, turn: usize) {
        if seq.tokens.len() < turn || seq.cache.len() < turn {
            return;
        }
        let tokens = &seq.tokens[..turn];
        let name = entry_name(tokens);
        if self.known.contains(&name) {
            return;
        }
        let path = self.dir.join(&name);
        if fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            self.known.insert(name);
            return;
        }
        let Some(shape) = self.shape(&seq.cache, turn) else {
            return;
        };
        if shape.file_bytes() > self.budget {
            return;
        }
        let written = prefix_file::encode(&self.identity, shape, tokens, &seq.cache)
            .map_err(|err| io::Error::other(err.to_string()))
            .and_then(|bytes| write_atomically(&self.dir, &path, &bytes));
        match written {
            Ok(()) => {
                info!(tokens = turn, path = %path.display(), "prefix store: system turn saved");
                self.known.insert(name);
                self.evict();
            }
            Err(err) => {
                // Not tried again in this process: a full disk or a read-only cache would
                // otherwise cost every request the encoding and a warning.
                warn!(path = %path.display(), %err, "prefix store: could not save");
                self.known.insert(name);
            }
        }
    }

    fn shape(&self, cache: &KvCache, tokens: usize) -> Option<FileShape> {
        let (layers, kv_heads, head_dim) = cache.dims();
        Some(FileShape {
            tokens,
            layers,
            kv_heads,
            head_dim,
            element: Element::of(cache.dtype())?,
        })
    }

    /// Removes the least recently used entries, of any model, past the budget, and writes
    /// that died part-way.
    fn evict(&mut self) {
        let mut entries = Vec::new();
        let Ok(models) = fs::read_dir(&self.root) else {
            return;
        };
        for dir in models.flatten().take(MAX_WALK) {
            if !dir.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let Ok(files) = fs::read_dir(dir.path()) else {
                continue;
            };
            for file in files.flatten().take(MAX_WALK) {
                let Ok(meta) = file.metadata() else { continue };
                if !meta.is_file() {
                    continue;
                }
                let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                let path = file.path();
                if path.extension().is_some_and(|e| e == EXTENSION) {
                    entries.push((modified, meta.len(), path));
                } else if file
                    .file_name()
                    .to_string_lossy()
                    .starts_with(PARTIAL_PREFIX)
                    && modified.elapsed().is_ok_and(|age| age > STALE_PARTIAL)
                {
                    let _ = fs::remove_file(path);
                }
            }
            // Only removes a directory left empty, e.g. by an older build's entries.
            let _ = fs::remove_dir(dir.path());
        }
        entries.sort();
        let mut total: u64 = entries.iter().map(|(_, len, _)| len).sum();
        for (_, len, path) in entries {
            if total <= self.budget {
                break;
            }
            if fs::remove_file(&path).is_ok() {
                debug!(path = %path.display(), "prefix store: evicted");
                total -= len;
                if let Some(name) = path.file_name() {
                    self.known.remove(&*name.to_string_lossy());
                }
            }
        }
    }
}

/// What decides a cache's contents besides its tokens: the model file, this build, the
/// kernels chosen for this CPU, and the model's shape.
fn identity(model_path: &Path, model: &Model) -> io::Result<[u8; 32]> {
    let mut hash = Sha256::new();
    hash.update(b"hearth prefix identity ");
    hash.update(VERSION.to_le_bytes());
    let stamp = |hash: &mut Sha256, path: &Path| -> io::Result<()> {
        let meta = fs::metadata(path)?;
        let modified = meta
            .modified()?
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        hash.update(path.as_os_str().as_encoded_bytes());
        hash.update([0]);
        hash.update(meta.len().to_le_bytes());
        hash.update(modified.as_nanos().to_le_bytes());
        Ok(())
    };
    stamp(&mut hash, &fs::canonicalize(model_path)?)?;
    stamp(&mut hash, &std::env::current_exe()?)?;
    hash.update(env!("CARGO_PKG_VERSION"));
    hash.update(format!("{:?} {:?}", model.config(), model.kernels()));
    Ok(hash.finalize().into())
}

fn entry_name(tokens: &[u32]) -> String {
    let mut hash = Sha256::new();
    for token in tokens {
        hash.update(token.to_le_bytes());
    }
    format!("{}.{EXTENSION}", hex(&hash.finalize()[..16]))
}

/// `path` opened for reading if it is a regular file; `None` if there is no such entry.
/// Opened without following links or waiting on a FIFO, and checked again once open, so that
/// nothing else planted under the name is read or blocks the engine.
fn open_regular(path: &Path) -> io::Result<Option<(File, u64)>> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => return Err(io::Error::other("not a regular file")),
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err),
    }
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    Ok(Some((file, meta.len())))
}

/// The whole of `path` if it is a regular file `expected` bytes long (one of another length
/// is removed); `None` if there is no such entry.
fn read_regular(path: &Path, expected: u64) -> io::Result<Option<Vec<u8>>> {
    let Some((file, len)) = open_regular(path)? else {
        return Ok(None);
    };
    if len != expected {
        let _ = fs::remove_file(path);
        return Err(io::Error::other(format!(
            "{len} bytes where {expected} were expected; removed"
        )));
    }
    let mut bytes = Vec::with_capacity(expected as usize);
    file.take(expected).read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

/// The tokens of the entry at `path` if its header names `identity` and the shape of `shape`
/// (its token count aside, at most `max_tokens`) and its length fits; `None` if it does not.
/// An error where it is not a regular file or cannot be read.
fn read_tokens(
    path: &Path,
    identity: &[u8; 32],
    shape: FileShape,
    max_tokens: usize,
) -> io::Result<Option<Vec<u32>>> {
    let Some((mut file, len)) = open_regular(path)? else {
        return Err(io::ErrorKind::NotFound.into());
    };
    let mut header = [0u8; HEADER_BYTES];
    if (len as usize) < HEADER_BYTES {
        return Ok(None);
    }
    file.read_exact(&mut header)?;
    let Some((found, found_shape)) = prefix_file::read_header(&header) else {
        return Ok(None);
    };
    let tokens = found_shape.tokens;
    if &found != identity
        || found_shape != (FileShape { tokens, ..shape })
        || tokens > max_tokens
        || found_shape.file_bytes() != len
    {
        return Ok(None);
    }
    let mut bytes = vec![0u8; 4 * tokens];
    file.read_exact(&mut bytes)?;
    Ok(Some(prefix_file::tokens_of(&bytes)))
}

/// Writes `bytes` to `path` through a file of its own in `dir`, renamed into place, so that a
/// reader (another hearth) sees the whole entry or none.
fn write_atomically(dir: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    create_private_dir(dir)?;
    let mut partial = tempfile::Builder::new()
        .prefix(PARTIAL_PREFIX)
        .tempfile_in(dir)?;
    partial.write_all(bytes)?;
    partial.persist(path).map_err(|err| err.error)?;
    Ok(())
}

fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Marks an entry as just used, for the eviction order.
fn touch(path: &Path) {
    if let Ok(file) = File::options().append(true).open(path) {
        let _ = file.set_modified(SystemTime::now());
    }
}

#[cfg(test)]
#[path = "prefix_store_tests.rs"]
mod tests;

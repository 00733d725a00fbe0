//! Content-addressed side files for image bytes: `<root>/blobs/<sha256>`. An image is written
//! once however many rounds or sessions refer to it, and is never modified after its rename.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::error::StoreError;
use super::paths::hex;

/// A SHA-256 in lowercase hex: the name of a blob.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct BlobHash(String);

impl BlobHash {
    pub fn of(bytes: &[u8]) -> Self {
        Self(hex(&Sha256::digest(bytes)))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True when this is 64 lowercase hex digits. Hashes are read from session files, which a
    /// person may edit: only a well-formed hash becomes a path.
    fn is_well_formed(&self) -> bool {
        self.0.len() == 64
            && self
                .0
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    }
}

impl std::fmt::Display for BlobHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The blob directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BlobStore {
    dir: PathBuf,
}

impl BlobStore {
    pub(crate) fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// Stores `bytes` (if not already there) and returns their hash. Durable on return: the
    /// bytes are written to a temporary file, synced, and renamed into place, so a reader never
    /// sees a partial blob and a record is never written before the blob it names.
    pub(crate) fn put(&self, bytes: &[u8]) -> Result<BlobHash, StoreError> {
        let hash = BlobHash::of(bytes);
        let path = self.dir.join(hash.as_str());
        if path.exists() {
            return Ok(hash);
        }
        super::paths::private_dir_all(&self.dir).map_err(|e| StoreError::io(&self.dir, e))?;
        let tmp = self
            .dir
            .join(format!(".{hash}.{}.tmp", uuid::Uuid::new_v4().simple()));
        let written = write_synced(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, &path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(StoreError::io(&path, e));
        }
        sync_dir(&self.dir);
        Ok(hash)
    }

    /// The bytes of a blob; `None` when it is missing (deleted by hand) or the hash is not
    /// well formed.
    pub(crate) fn get(&self, hash: &BlobHash) -> Result<Option<Vec<u8>>, StoreError> {
        if !hash.is_well_formed() {
            return Ok(None);
        }
        let path = self.dir.join(hash.as_str());
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::io(path, e)),
        }
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Makes a new directory entry durable. Best effort: not every platform can open a directory.
pub(crate) fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Err(e) = std::fs::File::open(dir).and_then(|d| d.sync_all()) {
        tracing::debug!(dir = %dir.display(), "cannot sync directory: {e}");
    }
    #[cfg(not(unix))]
    let _ = dir;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_is_idempotent_and_get_refuses_odd_names() {
        let tmp = tempfile::tempdir().unwrap();
        let blobs = BlobStore::new(tmp.path().join("blobs"));
        let a = blobs.put(b"png bytes").unwrap();
        let b = blobs.put(b"png bytes").unwrap();
        assert_eq!(a, b);
        assert_eq!(
            std::fs::read_dir(tmp.path().join("blobs")).unwrap().count(),
            1
        );
        assert_eq!(blobs.get(&a).unwrap().unwrap(), b"png bytes");
        let missing = BlobHash::of(b"other");
        assert_eq!(blobs.get(&missing).unwrap(), None);
        for odd in ["../../etc/passwd", "", "ABC", &"g".repeat(64)] {
            assert_eq!(
                blobs.get(&BlobHash(odd.to_string())).unwrap(),
                None,
                "{odd}"
            );
        }
    }
}

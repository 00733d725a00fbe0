//! One writer per session. Two processes appending rounds to one session file interleave
//! them (two rounds numbered alike, each history missing the other's turns), so a process
//! that opens a session for writing holds an exclusive advisory lock on
//! `<root>/locks/<id>.lock` for as long as it holds a writer for it. A second process gets
//! [`StoreError::Busy`] at once (no waiting: nothing here blocks an async caller); a process
//! that dies, even by `kill -9`, releases the lock with its file descriptors.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use hearth_conversation::SessionId;

use super::error::StoreError;
use super::paths::private_dir_all;

/// An exclusive lock on one session; released (and its file removed) when dropped.
#[derive(Debug)]
pub(crate) struct SessionLock {
    file: File,
    path: PathBuf,
}

impl SessionLock {
    pub(crate) fn acquire(locks_dir: &Path, id: &SessionId) -> Result<Self, StoreError> {
        private_dir_all(locks_dir).map_err(|e| StoreError::io(locks_dir, e))?;
        let path = locks_dir.join(format!("{id}.lock"));
        loop {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(&path)
                .map_err(|e| StoreError::io(&path, e))?;
            match fs4::FileExt::try_lock(&file) {
                // Locked, but the file may have been removed by the holder that just let
                // go: only a lock on the file still at `path` counts.
                Ok(()) if same_file(&file, &path) => return Ok(Self { file, path }),
                Ok(()) => continue,
                Err(fs4::TryLockError::WouldBlock) => {
                    return Err(StoreError::Busy(id.clone()));
                }
                Err(fs4::TryLockError::Error(e)) => return Err(StoreError::io(&path, e)),
            }
        }
    }
}

fn same_file(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(held), Ok(named)) => held.dev() == named.dev() && held.ino() == named.ino(),
        _ => false,
    }
}

impl Drop for SessionLock {
    fn drop(&mut self) {
        // Removed while still locked, so a waiter either locks this file and sees it gone
        // (and retries), or creates a fresh one.
        let _ = std::fs::remove_file(&self.path);
        if let Err(e) = fs4::FileExt::unlock(&self.file) {
            tracing::debug!("releasing a session lock: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let id = SessionId::generate();
        let first = SessionLock::acquire(dir.path(), &id).unwrap();
        // flock locks belong to open files: a second open in this process conflicts just as
        // another process would.
        assert!(matches!(
            SessionLock::acquire(dir.path(), &id),
            Err(StoreError::Busy(_))
        ));
        let other = SessionLock::acquire(dir.path(), &SessionId::generate());
        assert!(other.is_ok(), "other sessions are unaffected");
        drop(first);
        assert!(SessionLock::acquire(dir.path(), &id).is_ok());
    }
}

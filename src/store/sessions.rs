//! [`Store`]: the entry point front ends hold. Its methods do blocking file I/O: call them from
//! `spawn_blocking` (or a CLI), never on the ACP dispatch loop. Writing goes through a
//! [`SessionWriter`], whose task keeps the I/O off the caller.

use std::path::{Path, PathBuf};

use chrono::Utc;
use hearth_conversation::SessionId;

use super::append::Appender;
use super::blob::BlobStore;
use super::error::StoreError;
use super::list::{Page, list_sessions};
use super::load::{LoadedSession, load_file};
use super::paths::{Layout, canonical_cwd, data_root};
use super::record::{FORMAT_VERSION, Header};
use super::session_lock::SessionLock;
use super::wire::WireRecord;
use super::writer::{SessionWriter, encode_line};

/// The session store under one data root. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Store {
    layout: Layout,
    blobs: BlobStore,
}

impl Store {
    /// A store rooted at `root` (created on first write).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let layout = Layout::new(root.into());
        let blobs = BlobStore::new(layout.blobs_dir());
        Self { layout, blobs }
    }

    /// The store at `HEARTH_DATA_DIR`, else under the platform data directory; see
    /// [`super::data_root`].
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Self, StoreError> {
        data_root(env).map(Self::new)
    }

    pub fn root(&self) -> &Path {
        self.layout.root()
    }

    /// Starts a new session in the project `cwd`. The file (header first) is created when the
    /// first record is written, so a session nobody prompted leaves nothing behind. Needs a
    /// tokio runtime. If a file with this id already exists, the first write fails and
    /// [`SessionWriter::flush`] reports it.
    pub fn create(&self, id: &SessionId, cwd: &Path) -> Result<SessionWriter, StoreError> {
        let cwd = canonical_cwd(cwd);
        let path = self
            .layout
            .session_file(&self.layout.project_dir(&cwd), id)?;
        let header = WireRecord::Header(Header {
            version: FORMAT_VERSION,
            id: id.clone(),
            cwd,
            created_at: Utc::now(),
        });
        let line = encode_line(&header, &path)?;
        let lock = SessionLock::acquire(&self.layout.locks_dir(), id)?;
        SessionWriter::spawn(
            id.clone(),
            Appender::new_session(path, line),
            self.blobs.clone(),
            lock,
        )
    }

    /// A writer that appends to a stored session (after load or resume). Needs a tokio runtime.
    pub fn open_writer(&self, id: &SessionId) -> Result<SessionWriter, StoreError> {
        let path = self.find(id)?;
        let lock = SessionLock::acquire(&self.layout.locks_dir(), id)?;
        SessionWriter::spawn(
            id.clone(),
            Appender::existing(path),
            self.blobs.clone(),
            lock,
        )
    }

    /// The file of a stored session, in whichever project it is. With several (a copied
    /// file), the most recently changed.
    pub fn find(&self, id: &SessionId) -> Result<PathBuf, StoreError> {
        let mut found: Option<(std::time::SystemTime, PathBuf)> = None;
        let projects = match std::fs::read_dir(self.layout.sessions_dir()) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::UnknownSession(id.clone()));
            }
            Err(e) => return Err(StoreError::io(self.layout.sessions_dir(), e)),
        };
        for project in projects.filter_map(Result::ok) {
            let path = self.layout.session_file(&project.path(), id)?;
            if let Ok(modified) = std::fs::metadata(&path).and_then(|m| m.modified())
                && found.as_ref().is_none_or(|(t, _)| modified > *t)
            {
                found = Some((modified, path));
            }
        }
        found
            .map(|(_, path)| path)
            .ok_or_else(|| StoreError::UnknownSession(id.clone()))
    }

    /// Reads a stored session; damage after the header is reported in
    /// [`LoadedSession::warnings`], not as an error.
    pub fn load(&self, id: &SessionId) -> Result<LoadedSession, StoreError> {
        let path = self.find(id)?;
        load_file(&path, Some(id), &self.blobs)
    }

    /// One page of sessions, newest first: of the project `filter_cwd`, or of all projects.
    /// `cursor` is a previous page's `next_cursor`; `limit` is at least 1. A file whose header
    /// cannot be read is left out (and logged), so a page may hold fewer than `limit`.
    pub fn list(
        &self,
        filter_cwd: Option<&Path>,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page, StoreError> {
        list_sessions(&self.layout, filter_cwd, cursor, limit)
    }

    /// Deletes a stored session's file. Its image blobs stay (other sessions may share them).
    /// A writer still open on it keeps writing to the unlinked file, which is then lost.
    pub fn delete(&self, id: &SessionId) -> Result<(), StoreError> {
        let path = self.find(id)?;
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(StoreError::UnknownSession(id.clone()))
            }
            Err(e) => Err(StoreError::io(path, e)),
        }
    }
}

#[cfg(test)]
#[path = "sessions_tests.rs"]
mod tests;

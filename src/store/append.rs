//! Appending lines to a session file so that several processes can share it.
//!
//! Each record is one `write` of `json\n` on a file opened with `O_APPEND`, made while holding
//! an exclusive advisory lock on the file: two hearth processes (Zed and a REPL on one
//! project) never interleave bytes or overwrite each other. The file is never rewritten in
//! place. If the file does not end with a newline (a writer died mid-record), the next record
//! starts with one, so the torn fragment stays a line of its own (reported on load) and the new
//! record is whole.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::blob::sync_dir;
use super::error::StoreError;

/// Appends lines to one session file.
#[derive(Debug)]
pub(crate) struct Appender {
    path: PathBuf,
    file: Option<File>,
    /// The header line, for a session whose file does not exist yet: the file is created
    /// (exclusively) with it when the first record arrives.
    header: Option<Vec<u8>>,
}

/// Holds the advisory lock; releases it when dropped, on every path.
struct Locked<'a>(&'a File);

impl<'a> Locked<'a> {
    fn new(file: &'a File) -> std::io::Result<Self> {
        // Named in full: `File::lock` in std (1.89+) would shadow the trait method.
        fs4::FileExt::lock(file)?;
        Ok(Self(file))
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        if let Err(e) = fs4::FileExt::unlock(self.0) {
            tracing::warn!("cannot release a session file lock: {e}");
        }
    }
}

impl Appender {
    /// For a new session: the file is created with `header_line` first.
    pub(crate) fn new_session(path: PathBuf, header_line: Vec<u8>) -> Self {
        Self {
            path,
            file: None,
            header: Some(header_line),
        }
    }

    /// For a session whose file exists.
    pub(crate) fn existing(path: PathBuf) -> Self {
        Self {
            path,
            file: None,
            header: None,
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one line (`line` must end with `\n` and contain no other newline). Not yet
    /// durable: see [`Appender::sync`].
    pub(crate) fn append(&mut self, line: &[u8]) -> Result<(), StoreError> {
        let path = self.path.clone();
        let file = self.open()?;
        append_locked(file, line).map_err(|e| StoreError::io(path, e))
    }

    /// Makes every appended line durable (`fdatasync`).
    pub(crate) fn sync(&mut self) -> Result<(), StoreError> {
        match &self.file {
            Some(file) => file.sync_data().map_err(|e| StoreError::io(&self.path, e)),
            None => Ok(()),
        }
    }

    fn open(&mut self) -> Result<&File, StoreError> {
        if self.file.is_none() {
            let file = match self.header.take() {
                Some(header) => match create_with_header(&self.path, &header) {
                    Ok(file) => file,
                    Err(e) => {
                        // Keep the header, so a retry after a transient failure writes it.
                        self.header = Some(header);
                        return Err(e);
                    }
                },
                None => OpenOptions::new()
                    .read(true)
                    .append(true)
                    .open(&self.path)
                    .map_err(|e| StoreError::io(&self.path, e))?,
            };
            self.file = Some(file);
        }
        self.file
            .as_ref()
            .ok_or_else(|| StoreError::io(&self.path, std::io::ErrorKind::NotFound.into()))
    }
}

/// Creates the file (never over an existing one) and writes its header, durably: the file and
/// its directory entry are synced.
fn create_with_header(path: &Path, header: &[u8]) -> Result<File, StoreError> {
    let err = |e| StoreError::io(path, e);
    let dir = path.parent().unwrap_or(Path::new("."));
    super::paths::private_dir_all(dir).map_err(err)?;
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(err)?;
    append_locked(&file, header).map_err(err)?;
    file.sync_data().map_err(err)?;
    sync_dir(dir);
    Ok(file)
}

fn append_locked(mut file: &File, line: &[u8]) -> std::io::Result<()> {
    let _lock = Locked::new(file)?;
    let mut buf = Vec::with_capacity(line.len() + 1);
    if !ends_with_newline(file)? {
        buf.push(b'\n');
    }
    buf.extend_from_slice(line);
    // One write call: with O_APPEND the kernel places it at the end as a unit.
    file.write_all(&buf)
}

/// True for an empty file or one whose last byte is `\n`.
fn ends_with_newline(mut file: &File) -> std::io::Result<bool> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(true);
    }
    file.seek(SeekFrom::Start(len - 1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    Ok(last[0] == b'\n')
}

#[cfg(test)]
#[path = "append_tests.rs"]
mod tests;

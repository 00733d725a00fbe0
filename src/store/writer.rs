//! The writer task of one open session. Front ends call [`SessionWriter::append`] from
//! anywhere (it never blocks or does I/O) and [`SessionWriter::flush`] when a round must be
//! durable. The task batches what is queued, does the file work on the blocking pool, and
//! syncs once per batch.

use std::path::{Path, PathBuf};

use hearth_conversation::SessionId;
use tokio::sync::{mpsc, oneshot};

use super::append::Appender;
use super::blob::BlobStore;
use super::error::StoreError;
use super::record::Record;
use super::session_lock::SessionLock;
use super::wire::to_wire;

/// Most commands handled in one trip to the blocking pool.
const MAX_BATCH: usize = 256;

enum Command {
    Append(Box<Record>),
    Flush(oneshot::Sender<Result<(), StoreError>>),
}

/// A handle to the writer task of one session. Clones share the task. When the last handle is
/// dropped, the task writes what is still queued and ends.
#[derive(Debug, Clone)]
pub struct SessionWriter {
    id: SessionId,
    path: PathBuf,
    tx: mpsc::UnboundedSender<Command>,
    /// One writer per session: held while any handle lives (released at once when the last
    /// goes, so the session can be reopened right away; records still queued are appended
    /// under the per-record file lock).
    _lock: std::sync::Arc<SessionLock>,
}

impl std::fmt::Debug for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Append(_) => "Append",
            Self::Flush(_) => "Flush",
        })
    }
}

impl SessionWriter {
    /// Starts the task. Needs a tokio runtime.
    pub(crate) fn spawn(
        id: SessionId,
        appender: Appender,
        blobs: BlobStore,
        lock: SessionLock,
    ) -> Result<Self, StoreError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| StoreError::NoRuntime)?;
        let (tx, rx) = mpsc::unbounded_channel();
        let path = appender.path().to_path_buf();
        let state = WriterState {
            appender,
            blobs,
            dirty: false,
            failed: None,
        };
        runtime.spawn(run(rx, state));
        Ok(Self {
            id,
            path,
            tx,
            _lock: std::sync::Arc::new(lock),
        })
    }

    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// The session file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Queues a record. Never blocks; a failure to write it is logged and returned by the next
    /// [`SessionWriter::flush`].
    pub fn append(&self, record: Record) {
        if self.tx.send(Command::Append(Box::new(record))).is_err() {
            tracing::error!(session = %self.id, "session writer has stopped; record dropped");
        }
    }

    /// Waits until every record queued before this call is written and synced to disk. Returns
    /// the first write error since the previous flush, if any.
    pub async fn flush(&self) -> Result<(), StoreError> {
        let (done, wait) = oneshot::channel();
        self.tx
            .send(Command::Flush(done))
            .map_err(|_| StoreError::WriterStopped(self.id.clone()))?;
        wait.await
            .map_err(|_| StoreError::WriterStopped(self.id.clone()))?
    }
}

/// What the task owns between batches (moved to the blocking pool and back).
struct WriterState {
    appender: Appender,
    blobs: BlobStore,
    /// Lines written since the last sync.
    dirty: bool,
    /// The first failure since the last flush.
    failed: Option<StoreError>,
}

async fn run(mut rx: mpsc::UnboundedReceiver<Command>, mut state: WriterState) {
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(more) => batch.push(more),
                Err(_) => break,
            }
        }
        state = match tokio::task::spawn_blocking(move || {
            state.process(batch);
            state
        })
        .await
        {
            Ok(state) => state,
            Err(e) => {
                // Pending flushes see their sender dropped and report WriterStopped.
                tracing::error!("session writer failed: {e}");
                return;
            }
        };
    }
}

impl WriterState {
    fn process(&mut self, batch: Vec<Command>) {
        for command in batch {
            match command {
                Command::Append(record) => {
                    if let Err(e) = self.write(*record) {
                        tracing::error!(path = %self.appender.path().display(), "cannot store session record: {e}");
                        self.failed.get_or_insert(e);
                    }
                }
                Command::Flush(done) => {
                    let synced = self.sync();
                    let result = match self.failed.take() {
                        Some(e) => Err(e),
                        None => synced,
                    };
                    let _ = done.send(result);
                }
            }
        }
        if let Err(e) = self.sync() {
            tracing::error!(path = %self.appender.path().display(), "cannot sync session file: {e}");
            self.failed.get_or_insert(e);
        }
    }

    fn write(&mut self, record: Record) -> Result<(), StoreError> {
        let wire = to_wire(record, &self.blobs)?;
        let line = encode_line(&wire, self.appender.path())?;
        self.appender.append(&line)?;
        self.dirty = true;
        Ok(())
    }

    fn sync(&mut self) -> Result<(), StoreError> {
        if self.dirty {
            self.appender.sync()?;
            self.dirty = false;
        }
        Ok(())
    }
}

/// One record as one line: compact JSON (which never contains a raw newline) and `\n`.
pub(crate) fn encode_line(
    wire: &impl serde::Serialize,
    path: &Path,
) -> Result<Vec<u8>, StoreError> {
    let mut line = serde_json::to_vec(wire).map_err(|e| StoreError::io(path, e.into()))?;
    line.push(b'\n');
    Ok(line)
}

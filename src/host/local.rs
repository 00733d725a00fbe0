//! [`LocalClientOps`]: [`ClientOps`] done by hearth itself, on this machine. The REPL and batch
//! front ends use it, and the ACP front end falls back to it for what a client did not
//! advertise. Files go through [`file_io`] (regular files only, bounded reads); terminals are `sh -c` child processes in their own
//! process group, so a kill or release stops everything the command started.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use hearth_conversation::{AgentEvent, PermissionAnswer, Reach, TerminalId, ToolCard};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;

use super::client_ops::{ClientOps, ClientOpsError, ExitStatus, TerminalOutput, TerminalRequest};
use super::file_io;

/// How long to keep collecting output after the shell exits, for pipes held open by
/// background children (they are killed on release anyway).
const OUTPUT_DRAIN: Duration = Duration::from_millis(200);

/// What the front end provides: the user's answer to permission requests and somewhere to
/// show events.
#[async_trait]
pub trait LocalFrontEnd: Send + Sync {
    /// Asks the user; resolves to [`PermissionAnswer::Cancelled`] if the turn is cancelled.
    async fn request_permission(&self, card: &ToolCard, reach: Reach) -> PermissionAnswer;
    /// Shows an event; must not block.
    fn send(&self, event: AgentEvent);
}

/// [`ClientOps`] on the local machine.
pub struct LocalClientOps {
    front: Arc<dyn LocalFrontEnd>,
    terminals: Mutex<HashMap<TerminalId, Arc<Terminal>>>,
    next_id: AtomicU64,
}

/// One running (or finished, not yet released) command.
struct Terminal {
    /// The process group id (the shell's pid: it leads its own group).
    pgid: i32,
    output: Arc<Mutex<TailBuffer>>,
    exit: watch::Receiver<Option<ExitStatus>>,
}

impl LocalClientOps {
    pub fn new(front: Arc<dyn LocalFrontEnd>) -> Self {
        Self {
            front,
            terminals: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
        }
    }

    fn terminals(&self) -> MutexGuard<'_, HashMap<TerminalId, Arc<Terminal>>> {
        // A poisoned lock only means another thread panicked mid-insert; the map is still valid.
        self.terminals.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn terminal(&self, id: &TerminalId) -> Result<Arc<Terminal>, ClientOpsError> {
        self.terminals()
            .get(id)
            .cloned()
            .ok_or_else(|| ClientOpsError::Failed(format!("no terminal with id {id}")))
    }
}

impl Drop for LocalClientOps {
    /// Nothing outlives its host: kill every terminal not yet released.
    fn drop(&mut self) {
        for terminal in self.terminals().values() {
            kill_group(terminal.pgid);
        }
    }
}

#[async_trait]
impl ClientOps for LocalClientOps {
    async fn read_text_file(
        &self,
        path: &Path,
        line: Option<u32>,
        limit: Option<u32>,
    ) -> Result<String, ClientOpsError> {
        let path = path.to_path_buf();
        blocking(move || file_io::read_text(&path, line, limit)).await
    }

    async fn write_text_file(&self, path: &Path, content: &str) -> Result<(), ClientOpsError> {
        let (path, content) = (path.to_path_buf(), content.to_owned());
        blocking(move || file_io::write_text(&path, &content)).await
    }

    async fn create_terminal(
        &self,
        request: TerminalRequest,
    ) -> Result<TerminalId, ClientOpsError> {
        let mut command = tokio::process::Command::new("sh");
        command
            .arg("-c")
            .arg(&request.command)
            .current_dir(&request.cwd)
            .envs(request.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        super::die_with_parent(&mut command);
        let mut child = command.spawn().map_err(|e| {
            ClientOpsError::Failed(format!(
                "cannot start `sh -c` in {}: {e}",
                request.cwd.display()
            ))
        })?;
        let pgid = child
            .id()
            .and_then(|pid| i32::try_from(pid).ok())
            .ok_or_else(|| ClientOpsError::Failed("the command exited before it started".into()))?;
        let limit = usize::try_from(request.output_byte_limit).unwrap_or(usize::MAX);
        let output = Arc::new(Mutex::new(TailBuffer::new(limit)));
        let readers = [
            child.stdout.take().map(|s| spawn_reader(s, output.clone())),
            child.stderr.take().map(|s| spawn_reader(s, output.clone())),
        ];
        let (exit_tx, exit_rx) = watch::channel(None);
        tokio::spawn(async move {
            let status = match child.wait().await {
                Ok(status) => exit_status(status),
                Err(e) => {
                    tracing::warn!("waiting for a terminal's process failed: {e}");
                    ExitStatus::default()
                }
            };
            for reader in readers.into_iter().flatten() {
                let _ = tokio::time::timeout(OUTPUT_DRAIN, reader).await;
            }
            let _ = exit_tx.send(Some(status));
        });
        let id = TerminalId::new(format!(
            "local-term-{}",
            self.next_id.fetch_add(1, Ordering::Relaxed)
        ));
        let terminal = Terminal {
            pgid,
            output,
            exit: exit_rx,
        };
        self.terminals().insert(id.clone(), Arc::new(terminal));
        tracing::debug!(%id, pgid, "terminal created");
        Ok(id)
    }

    async fn terminal_output(&self, id: &TerminalId) -> Result<TerminalOutput, ClientOpsError> {
        let terminal = self.terminal(id)?;
        let exit_status = terminal.exit.borrow().clone();
        let buffer = terminal.output.lock().unwrap_or_else(|e| e.into_inner());
        Ok(TerminalOutput {
            output: buffer.text(),
            truncated: buffer.truncated,
            exit_status,
        })
    }

    async fn wait_for_exit(&self, id: &TerminalId) -> Result<ExitStatus, ClientOpsError> {
        let mut exit = self.terminal(id)?.exit.clone();
        let status = exit
            .wait_for(Option::is_some)
            .await
            .map_err(|_| ClientOpsError::Failed("the terminal's waiter stopped".into()))?;
        Ok(status.clone().unwrap_or_default())
    }

    async fn kill_terminal(&self, id: &TerminalId) -> Result<(), ClientOpsError> {
        kill_group(self.terminal(id)?.pgid);
        Ok(())
    }

    async fn release_terminal(&self, id: &TerminalId) -> Result<(), ClientOpsError> {
        let terminal = self
            .terminals()
            .remove(id)
            .ok_or_else(|| ClientOpsError::Failed(format!("no terminal with id {id}")))?;
        // Released means gone: stop whatever the command left running in its group.
        kill_group(terminal.pgid);
        Ok(())
    }

    async fn request_permission(&self, card: &ToolCard, reach: Reach) -> PermissionAnswer {
        self.front.request_permission(card, reach).await
    }

    fn send(&self, event: AgentEvent) {
        self.front.send(event);
    }
}

/// Runs blocking file I/O off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ClientOpsError> + Send + 'static,
) -> Result<T, ClientOpsError> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|e| Err(ClientOpsError::Failed(format!("file I/O stopped: {e}"))))
}

/// SIGKILLs a whole process group. A group that is already gone is not an error.
fn kill_group(pgid: i32) {
    if pgid <= 1 {
        return;
    }
    // SAFETY: kill(2) takes plain integers and touches no memory of ours; a negative pid
    // addresses the process group the shell leads (it was started with process_group(0)).
    let rc = unsafe { libc::kill(-pgid, libc::SIGKILL) };
    if rc != 0 {
        tracing::trace!(
            pgid,
            "kill of process group: {}",
            std::io::Error::last_os_error()
        );
    }
}

fn spawn_reader(
    mut stream: impl AsyncRead + Unpin + Send + 'static,
    output: Arc<Mutex<TailBuffer>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut chunk = vec![0u8; 16 * 1024];
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => output
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(&chunk[..n]),
            }
        }
    })
}

fn exit_status(status: std::process::ExitStatus) -> ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    ExitStatus {
        exit_code: status.code().and_then(|c| u32::try_from(c).ok()),
        signal: status.signal().map(signal_name),
    }
}

fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        other => return format!("signal {other}"),
    };
    name.to_owned()
}

/// The last `limit` bytes of a stream.
struct TailBuffer {
    bytes: VecDeque<u8>,
    limit: usize,
    truncated: bool,
}

impl TailBuffer {
    fn new(limit: usize) -> Self {
        Self {
            bytes: VecDeque::new(),
            limit,
            truncated: false,
        }
    }

    fn push(&mut self, data: &[u8]) {
        let keep = &data[data.len().saturating_sub(self.limit)..];
        self.truncated |= keep.len() < data.len();
        self.bytes.extend(keep);
        let excess = self.bytes.len().saturating_sub(self.limit);
        if excess > 0 {
            self.bytes.drain(..excess);
            self.truncated = true;
        }
    }

    /// The text, starting at a character boundary when the front was cut.
    fn text(&self) -> String {
        let (a, b) = self.bytes.as_slices();
        let mut all = Vec::with_capacity(self.bytes.len());
        all.extend_from_slice(a);
        all.extend_from_slice(b);
        let skip = if self.truncated {
            all.iter()
                .take(3)
                .take_while(|&&b| b & 0xC0 == 0x80)
                .count()
        } else {
            0
        };
        String::from_utf8_lossy(&all[skip..]).into_owned()
    }
}

#[cfg(test)]
#[path = "local_tests.rs"]
mod tests;

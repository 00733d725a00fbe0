//! A fake editor on the client side of ACP: the SDK's client, advertising fs and terminals (or
//! nothing), serving them for real, answering permission requests from a script, and recording
//! every request the agent sent it.
//!
//! - `fs/read_text_file` serves the editor's buffers first (unsaved text that differs from
//!   disk, so a test can tell an editor read from a local one), then the files on disk; a
//!   missing file is `resource_not_found`.
//! - `fs/write_text_file` is recorded, never written: the "review" is the test's to inspect.
//! - `terminal/*` run the command for real as a child process (in its own process group, so a
//!   kill or release stops everything it started) and serve its output.
//!
//! Every message is logged in arrival order, `session/update` notifications included, so tests
//! can check how cards, questions and requests interleave.

use std::collections::{HashMap, VecDeque};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::v1::Builder;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, CreateTerminalRequest, CreateTerminalResponse, FileSystemCapabilities,
    KillTerminalRequest, KillTerminalResponse, ReadTextFileRequest, ReadTextFileResponse,
    ReleaseTerminalRequest, ReleaseTerminalResponse, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, SelectedPermissionOutcome,
    SessionNotification, TerminalExitStatus, TerminalOutputRequest, TerminalOutputResponse,
    WaitForTerminalExitRequest, WaitForTerminalExitResponse, WriteTextFileRequest,
    WriteTextFileResponse,
};
use agent_client_protocol::{
    Agent, Client, HandleDispatchFrom, on_receive_notification, on_receive_request,
};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// One message the agent sent to the editor: its method and its params as JSON.
#[derive(Debug, Clone)]
pub struct Logged {
    pub method: &'static str,
    pub params: Value,
}

/// A running or finished command in one of the editor's terminals.
struct Term {
    output: Arc<Mutex<String>>,
    exit: watch::Receiver<Option<TerminalExitStatus>>,
    kill: CancellationToken,
}

#[derive(Default)]
struct Inner {
    log: Vec<Logged>,
    /// Option ids to select, one per permission request, in order.
    answers: VecDeque<&'static str>,
    buffers: HashMap<PathBuf, String>,
    terminals: HashMap<String, Term>,
    updates: Vec<SessionNotification>,
    /// When set, `fs/write_text_file` fails with an internal error carrying this `data`.
    refuse_writes: Option<Value>,
    /// Reads of paths outside this directory are refused (resource not found), as Zed does.
    reads_within: Option<PathBuf>,
}

/// The fake editor. Clones share everything.
#[derive(Clone, Default)]
pub struct Editor {
    inner: Arc<Mutex<Inner>>,
    next_terminal: Arc<AtomicU64>,
}

/// Capabilities an editor advertises: all of fs and terminals, or nothing.
pub fn capabilities(full: bool) -> ClientCapabilities {
    if full {
        ClientCapabilities::new()
            .fs(FileSystemCapabilities::new()
                .read_text_file(true)
                .write_text_file(true))
            .terminal(true)
    } else {
        ClientCapabilities::new()
    }
}

impl Editor {
    /// Queues the option ids (`allow_once`, `allow_always`, `reject_once`, `reject_always`) the
    /// next permission requests select. A request with none queued is answered `cancelled`.
    pub fn answer(&self, ids: &[&'static str]) {
        self.lock().answers.extend(ids.iter().copied());
    }

    /// Answers every `fs/write_text_file` with an internal error carrying `data`, as acpx does
    /// when its user denies the write.
    pub fn refuse_writes(&self, data: Value) {
        self.lock().refuse_writes = Some(data);
    }

    /// Refuses reads of anything outside `dir`, as an editor refuses paths outside its
    /// project.
    pub fn refuse_reads_outside(&self, dir: PathBuf) {
        self.lock().reads_within = Some(dir);
    }

    /// An unsaved buffer: reads of `path` get `text`, whatever is on disk.
    pub fn buffer(&self, path: PathBuf, text: &str) {
        self.lock().buffers.insert(path, text.to_string());
    }

    pub fn log(&self) -> Vec<Logged> {
        self.lock().log.clone()
    }

    pub fn clear(&self) {
        let mut inner = self.lock();
        inner.log.clear();
        inner.updates.clear();
    }

    /// Every `session/update` received, in order.
    pub fn updates(&self) -> Vec<SessionNotification> {
        self.lock().updates.clone()
    }

    /// The methods of every recorded request (notifications left out), in order.
    pub fn methods(&self) -> Vec<&'static str> {
        self.log()
            .iter()
            .map(|l| l.method)
            .filter(|m| *m != "session/update")
            .collect()
    }

    /// The params of every request of `method`, in order.
    pub fn requests(&self, method: &str) -> Vec<Value> {
        self.log()
            .into_iter()
            .filter(|l| l.method == method)
            .map(|l| l.params)
            .collect()
    }

    /// Waits (up to 5 s) until `pred` holds over the recorded requests.
    pub async fn wait_for(&self, pred: impl Fn(&[Logged]) -> bool) -> bool {
        for _ in 0..500 {
            if pred(&self.log()) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap()
    }

    fn record(&self, method: &'static str, params: &impl serde::Serialize) {
        let params = serde_json::to_value(params).unwrap();
        self.lock().log.push(Logged { method, params });
    }

    fn read(&self, req: &ReadTextFileRequest) -> Result<String, agent_client_protocol::Error> {
        let buffered = self.lock().buffers.get(&req.path).cloned();
        let refused = self
            .lock()
            .reads_within
            .as_ref()
            .is_some_and(|dir| !req.path.starts_with(dir));
        let text = match buffered {
            Some(text) => text,
            None if refused => {
                return Err(agent_client_protocol::Error::from(
                    agent_client_protocol::v1::schema::Error::resource_not_found(Some(
                        req.path.display().to_string(),
                    )),
                ));
            }
            None => std::fs::read_to_string(&req.path).map_err(|_| {
                agent_client_protocol::Error::from(
                    agent_client_protocol::v1::schema::Error::resource_not_found(Some(
                        req.path.display().to_string(),
                    )),
                )
            })?,
        };
        let start = req.line.map_or(0, |l| l.saturating_sub(1) as usize);
        let limit = req.limit.map_or(usize::MAX, |l| l as usize);
        if start == 0 && limit == usize::MAX {
            return Ok(text);
        }
        Ok(text.split_inclusive('\n').skip(start).take(limit).collect())
    }

    fn create_terminal(&self, req: &CreateTerminalRequest) -> std::io::Result<String> {
        let mut command = tokio::process::Command::new(&req.command);
        command
            .args(&req.args)
            .envs(req.env.iter().map(|e| (e.name.clone(), e.value.clone())))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group, so a kill stops whatever the shell started too.
            .process_group(0)
            .kill_on_drop(true);
        if let Some(cwd) = &req.cwd {
            command.current_dir(cwd);
        }
        let mut child = command.spawn()?;
        let pgid = child.id().unwrap_or_default();
        let output = Arc::new(Mutex::new(String::new()));
        let mut readers = Vec::new();
        for pipe in [
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn AsyncReadUnpin>),
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn AsyncReadUnpin>),
        ]
        .into_iter()
        .flatten()
        {
            readers.push(tokio::spawn(collect(pipe, output.clone())));
        }
        let (tx, exit) = watch::channel(None);
        let kill = CancellationToken::new();
        let killed = kill.clone();
        tokio::spawn(async move {
            let status = tokio::select! {
                status = child.wait() => status,
                () = killed.cancelled() => {
                    kill_group(pgid);
                    child.wait().await
                }
            };
            for reader in readers {
                let _ = reader.await;
            }
            let status = status.ok();
            let exit_status = TerminalExitStatus::new()
                .exit_code(status.and_then(|s| s.code()).map(|c| c as u32))
                .signal(
                    status
                        .and_then(|s| s.signal())
                        .map(|s| format!("signal {s}")),
                );
            let _ = tx.send(Some(exit_status));
        });
        let id = format!(
            "term-{}",
            self.next_terminal.fetch_add(1, Ordering::SeqCst) + 1
        );
        self.lock()
            .terminals
            .insert(id.clone(), Term { output, exit, kill });
        Ok(id)
    }

    fn terminal<T>(&self, id: &str, f: impl FnOnce(&Term) -> T) -> Option<T> {
        self.lock().terminals.get(id).map(f)
    }

    /// Whether every terminal created so far has exited (killed or finished).
    pub fn all_terminals_exited(&self) -> bool {
        self.lock()
            .terminals
            .values()
            .all(|t| t.exit.borrow().is_some())
    }
}

/// SIGKILL to the process group `pgid` (the `kill` utility: no unsafe code in tests).
fn kill_group(pgid: u32) {
    let _ = std::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .status();
}

trait AsyncReadUnpin: tokio::io::AsyncRead + Unpin + Send {}
impl<T: tokio::io::AsyncRead + Unpin + Send> AsyncReadUnpin for T {}

async fn collect(mut pipe: Box<dyn AsyncReadUnpin>, into: Arc<Mutex<String>>) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = pipe.read(&mut buf).await {
        if n == 0 {
            break;
        }
        into.lock()
            .unwrap()
            .push_str(&String::from_utf8_lossy(&buf[..n]));
    }
}

fn unknown_terminal(id: &str) -> agent_client_protocol::Error {
    agent_client_protocol::Error::invalid_params().data(serde_json::json!({ "terminal": id }))
}

/// The SDK client for `editor`: records updates and requests, serves fs and terminals.
pub fn editor_client(editor: Editor) -> Builder<Client, impl HandleDispatchFrom<Agent> + 'static> {
    let (e1, e2, e3, e4, e5, e6, e7, e8) = (
        editor.clone(),
        editor.clone(),
        editor.clone(),
        editor.clone(),
        editor.clone(),
        editor.clone(),
        editor.clone(),
        editor.clone(),
    );
    let sink = editor.clone();
    Client
        .v1()
        .name("hearth-fake-editor")
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                sink.record("session/update", &n);
                sink.lock().updates.push(n);
                Ok(())
            },
            on_receive_notification!(),
        )
        .on_receive_request(
            async move |req: RequestPermissionRequest, r, _cx| {
                e1.record("session/request_permission", &req);
                let answer = e1.lock().answers.pop_front();
                r.respond(RequestPermissionResponse::new(match answer {
                    Some(id) => {
                        RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id))
                    }
                    None => RequestPermissionOutcome::Cancelled,
                }))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ReadTextFileRequest, r, _cx| {
                e2.record("fs/read_text_file", &req);
                r.respond_with_result(e2.read(&req).map(ReadTextFileResponse::new))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: WriteTextFileRequest, r, _cx| {
                e3.record("fs/write_text_file", &req);
                let refusal = e3.lock().refuse_writes.clone();
                match refusal {
                    Some(data) => r.respond_with_error(
                        agent_client_protocol::Error::internal_error().data(data),
                    ),
                    None => r.respond(WriteTextFileResponse::new()),
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: CreateTerminalRequest, r, _cx| {
                e4.record("terminal/create", &req);
                match e4.create_terminal(&req) {
                    Ok(id) => r.respond(CreateTerminalResponse::new(id)),
                    Err(err) => r.respond_with_internal_error(err),
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: TerminalOutputRequest, r, _cx| {
                e5.record("terminal/output", &req);
                let id = req.terminal_id.to_string();
                let answer = e5.terminal(&id, |t| {
                    TerminalOutputResponse::new(t.output.lock().unwrap().clone(), false)
                        .exit_status(t.exit.borrow().clone())
                });
                r.respond_with_result(answer.ok_or_else(|| unknown_terminal(&id)))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: WaitForTerminalExitRequest, r, cx| {
                e6.record("terminal/wait_for_exit", &req);
                let id = req.terminal_id.to_string();
                let Some(mut exit) = e6.terminal(&id, |t| t.exit.clone()) else {
                    return r.respond_with_error(unknown_terminal(&id));
                };
                // Waiting must not hold up the connection: kill and release arrive meanwhile.
                cx.spawn(async move {
                    let status = match exit.wait_for(Option::is_some).await {
                        Ok(status) => status.clone().unwrap_or_default(),
                        Err(_) => TerminalExitStatus::new(),
                    };
                    r.respond(WaitForTerminalExitResponse::new(status))
                })
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: KillTerminalRequest, r, _cx| {
                e7.record("terminal/kill", &req);
                let id = req.terminal_id.to_string();
                match e7.terminal(&id, |t| t.kill.cancel()) {
                    Some(()) => r.respond(KillTerminalResponse::new()),
                    None => r.respond_with_error(unknown_terminal(&id)),
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ReleaseTerminalRequest, r, _cx| {
                e8.record("terminal/release", &req);
                let id = req.terminal_id.to_string();
                // Released: killed if still running; the id stays known so tests can check it.
                match e8.terminal(&id, |t| t.kill.cancel()) {
                    Some(()) => r.respond(ReleaseTerminalResponse::new()),
                    None => r.respond_with_error(unknown_terminal(&id)),
                }
            },
            on_receive_request!(),
        )
}

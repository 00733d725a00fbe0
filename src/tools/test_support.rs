//! Test fixture: a tempdir project, [`LocalClientOps`] with a recording front end, and a
//! helper that prepares and runs a tool as the turn loop would.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use hearth_conversation::{AgentEvent, PermissionAnswer, Reach, TerminalId, ToolCallId, ToolCard};
use tokio_util::sync::CancellationToken;

use super::handler::{Prepared, ToolContext, ToolError, ToolHandler, ToolLimits, ToolOutput};
use crate::host::{
    ClientOps, ClientOpsError, ExitStatus, LocalClientOps, LocalFrontEnd, TerminalOutput,
    TerminalRequest,
};

/// Records events; answers every permission request with `answer`.
pub struct RecordingFront {
    pub events: Mutex<Vec<AgentEvent>>,
    pub answer: PermissionAnswer,
}

impl RecordingFront {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            events: Mutex::new(Vec::new()),
            answer: PermissionAnswer::AllowOnce,
        })
    }

    pub fn events(&self) -> Vec<AgentEvent> {
        self.events.lock().unwrap().clone()
    }
}

#[async_trait]
impl LocalFrontEnd for RecordingFront {
    async fn request_permission(&self, _card: &ToolCard, _reach: Reach) -> PermissionAnswer {
        self.answer
    }

    fn send(&self, event: AgentEvent) {
        self.events.lock().unwrap().push(event);
    }
}

/// [`LocalClientOps`] that records every call in order and can serve "unsaved editor
/// buffers" (reads of those paths return the buffer, not the disk).
pub struct RecordingClient {
    pub inner: LocalClientOps,
    pub calls: Mutex<Vec<String>>,
    pub buffers: Mutex<std::collections::HashMap<PathBuf, String>>,
}

impl RecordingClient {
    pub fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }

    fn record(&self, call: String) {
        self.calls.lock().unwrap().push(call);
    }
}

#[async_trait]
impl ClientOps for RecordingClient {
    async fn read_text_file(
        &self,
        path: &std::path::Path,
        line: Option<u32>,
        limit: Option<u32>,
    ) -> Result<String, ClientOpsError> {
        self.record(format!("read {}", path.display()));
        if let Some(buffer) = self.buffers.lock().unwrap().get(path) {
            return Ok(buffer.clone());
        }
        self.inner.read_text_file(path, line, limit).await
    }

    async fn write_text_file(
        &self,
        path: &std::path::Path,
        content: &str,
    ) -> Result<(), ClientOpsError> {
        self.record(format!("write {}", path.display()));
        self.inner.write_text_file(path, content).await
    }

    async fn create_terminal(
        &self,
        request: TerminalRequest,
    ) -> Result<TerminalId, ClientOpsError> {
        self.record("create_terminal".into());
        self.inner.create_terminal(request).await
    }

    async fn terminal_output(&self, id: &TerminalId) -> Result<TerminalOutput, ClientOpsError> {
        self.record("terminal_output".into());
        self.inner.terminal_output(id).await
    }

    async fn wait_for_exit(&self, id: &TerminalId) -> Result<ExitStatus, ClientOpsError> {
        self.record("wait_for_exit".into());
        self.inner.wait_for_exit(id).await
    }

    async fn kill_terminal(&self, id: &TerminalId) -> Result<(), ClientOpsError> {
        self.record("kill_terminal".into());
        self.inner.kill_terminal(id).await
    }

    async fn release_terminal(&self, id: &TerminalId) -> Result<(), ClientOpsError> {
        self.record("release_terminal".into());
        self.inner.release_terminal(id).await
    }

    async fn request_permission(&self, card: &ToolCard, reach: Reach) -> PermissionAnswer {
        self.inner.request_permission(card, reach).await
    }

    fn send(&self, event: AgentEvent) {
        let kind = serde_json::to_value(&event).unwrap()["type"]
            .as_str()
            .unwrap()
            .to_owned();
        self.record(format!("send {kind}"));
        self.inner.send(event);
    }
}

pub struct Fixture {
    _dir: tempfile::TempDir,
    /// The project root (canonical), used as the session cwd.
    pub root: PathBuf,
    /// A home directory outside the project.
    pub home: PathBuf,
    pub front: Arc<RecordingFront>,
    pub client: RecordingClient,
    pub cancel: CancellationToken,
    pub limits: ToolLimits,
    pub call_id: ToolCallId,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let root = base.join("project");
        let home = base.join("home");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        let front = RecordingFront::new();
        Self {
            _dir: dir,
            root,
            home,
            client: RecordingClient {
                inner: LocalClientOps::new(front.clone()),
                calls: Mutex::new(Vec::new()),
                buffers: Mutex::new(std::collections::HashMap::new()),
            },
            front,
            cancel: CancellationToken::new(),
            limits: ToolLimits::default(),
            call_id: ToolCallId::new("call_test"),
        }
    }

    pub fn ctx(&self) -> ToolContext<'_> {
        ToolContext {
            cwd: &self.root,
            home: Some(&self.home),
            client: &self.client,
            call_id: &self.call_id,
            cancel: &self.cancel,
            limits: &self.limits,
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    /// Prepares and runs a call, as the turn loop does once the policy allows it.
    pub async fn call(
        &self,
        tool: &dyn ToolHandler,
        args: serde_json::Value,
    ) -> Result<(Prepared, ToolOutput), ToolError> {
        let ctx = self.ctx();
        let prepared = tool.prepare(&args, &ctx).await?;
        let output = tool.run(&args, &prepared, &ctx).await?;
        Ok((prepared, output))
    }

    /// The model-facing error of a call that must fail.
    pub async fn model_error(&self, tool: &dyn ToolHandler, args: serde_json::Value) -> String {
        match self.call(tool, args).await {
            Err(ToolError::Model(m)) => m,
            other => panic!("expected a model error, got {other:?}"),
        }
    }
}

/// Whether a process is still running (a zombie counts as gone).
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            // The state follows the parenthesised command name.
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|s| s.split_whitespace().next());
            state != Some("Z") && state != Some("X")
        }
        Err(_) => false,
    }
}

//! Test fixture: a tempdir project, [`LocalClientOps`] with a recording front end, and a
//! helper that prepares and runs a tool as the turn loop would.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::handler::{Prepared, ToolContext, ToolError, ToolHandler, ToolLimits, ToolOutput};
use crate::agent::{
    AgentEvent, LocalClientOps, LocalFrontEnd, PermissionAnswer, ToolCallId, ToolCard,
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
    async fn request_permission(&self, _card: &ToolCard) -> PermissionAnswer {
        self.answer
    }

    fn send(&self, event: AgentEvent) {
        self.events.lock().unwrap().push(event);
    }
}

pub struct Fixture {
    _dir: tempfile::TempDir,
    /// The project root (canonical), used as the session cwd.
    pub root: PathBuf,
    /// A home directory outside the project.
    pub home: PathBuf,
    pub front: Arc<RecordingFront>,
    pub client: LocalClientOps,
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
            client: LocalClientOps::new(front.clone()),
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

pub fn is_dir(path: &Path) -> bool {
    path.is_dir()
}

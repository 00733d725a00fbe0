//! A turn's lifecycle, in-process: the ticket is the turn's guard, and a host that goes away
//! mid-turn aborts the turn instead of feeding the model an error.

use std::path::Path;
use std::sync::Mutex;

use async_trait::async_trait;
use hearth::agent::{AgentCore, Session, TurnError};
use hearth::host::{ClientOps, ClientOpsError, ExitStatus, TerminalOutput, TerminalRequest};
use hearth_backend::{ContentPart, FinishReason};
use hearth_conversation::{AgentEvent, PermissionAnswer, Reach, TerminalId, ToolCard};

use crate::common::fake_backend::{FakeBackend, agent_core, finish, text};

/// A host whose connection is gone: every request it would forward fails as disconnected.
#[derive(Default)]
struct GoneHost {
    events: Mutex<Vec<AgentEvent>>,
}

#[async_trait]
impl ClientOps for GoneHost {
    async fn read_text_file(
        &self,
        _path: &Path,
        _line: Option<u32>,
        _limit: Option<u32>,
    ) -> Result<String, ClientOpsError> {
        Err(ClientOpsError::Disconnected)
    }

    async fn write_text_file(&self, _path: &Path, _content: &str) -> Result<(), ClientOpsError> {
        Err(ClientOpsError::Disconnected)
    }

    async fn create_terminal(
        &self,
        _request: TerminalRequest,
    ) -> Result<TerminalId, ClientOpsError> {
        Err(ClientOpsError::Disconnected)
    }

    async fn terminal_output(&self, _id: &TerminalId) -> Result<TerminalOutput, ClientOpsError> {
        Err(ClientOpsError::Disconnected)
    }

    async fn wait_for_exit(&self, _id: &TerminalId) -> Result<ExitStatus, ClientOpsError> {
        Err(ClientOpsError::Disconnected)
    }

    async fn kill_terminal(&self, _id: &TerminalId) -> Result<(), ClientOpsError> {
        Err(ClientOpsError::Disconnected)
    }

    async fn release_terminal(&self, _id: &TerminalId) -> Result<(), ClientOpsError> {
        Err(ClientOpsError::Disconnected)
    }

    async fn request_permission(&self, _card: &ToolCard, _reach: Reach) -> PermissionAnswer {
        PermissionAnswer::AllowOnce
    }

    fn send(&self, event: AgentEvent) {
        self.events.lock().unwrap().push(event);
    }
}

fn core(backend: &FakeBackend, data: &Path) -> AgentCore {
    agent_core(backend, data, "hermes")
}

fn session(core: &AgentCore, cwd: &Path) -> Session {
    core.new_session(cwd.to_path_buf(), core.default_settings(None, None, &[]))
}

#[tokio::test]
async fn a_host_that_disconnects_aborts_the_turn_without_another_request() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("a.txt"), "alpha\n").unwrap();
    let backend = FakeBackend::default();
    backend.push(vec![
        text("<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n</tool_call>"),
        finish(FinishReason::Stop),
    ]);
    backend.push(vec![text("never asked"), finish(FinishReason::Stop)]);
    let core = core(&backend, data.path());
    let session = session(&core, project.path());
    let ticket = session.begin_turn();
    let host = GoneHost::default();
    let outcome = core
        .run_prompt(
            &session,
            &ticket,
            vec![ContentPart::text("read a.txt")],
            &host,
        )
        .await;
    assert!(
        matches!(outcome, Err(TurnError::Aborted(ref m)) if m.contains("disconnected")),
        "{outcome:?}"
    );
    assert_eq!(
        backend.requests().len(),
        1,
        "nobody is left to answer: the model must not be asked again"
    );
}

#[tokio::test]
async fn a_turn_ends_when_its_ticket_drops_and_a_late_drop_ends_no_newer_turn() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let backend = FakeBackend::default();
    let core = core(&backend, data.path());
    let session = session(&core, project.path());

    let ticket = session.begin_turn();
    assert!(!ticket.cancel.is_cancelled());
    drop(ticket);
    assert!(!session.cancel(), "a dropped ticket leaves no turn running");

    // A second prompt replaces the first; the first ticket, dropped late, must not end the
    // second turn (numbers never repeat, even after the session went idle).
    let first = session.begin_turn();
    let second = session.begin_turn();
    assert!(
        first.cancel.is_cancelled(),
        "the replaced turn is cancelled"
    );
    assert!(second.number > first.number);
    drop(first);
    assert!(session.cancel(), "the second turn is still running");
    assert!(second.cancel.is_cancelled());
    drop(second);
    assert!(!session.cancel());

    // A turn begun after the session went idle must not share a number with a ticket still
    // held from before: that ticket's late drop would end the new turn.
    let old = session.begin_turn();
    let replacing = session.begin_turn();
    drop(replacing);
    let fresh = session.begin_turn();
    drop(old);
    assert!(session.cancel(), "the old ticket's drop ended a newer turn");
    drop(fresh);

    // A turn that fails before it starts (no model) still ends with its ticket.
    let no_model = core.new_session(
        project.path().to_path_buf(),
        hearth_conversation::SessionSettings {
            mode: hearth_conversation::Mode::Ask,
            model: None,
        },
    );
    let ticket = no_model.begin_turn();
    let outcome = core
        .run_prompt(
            &no_model,
            &ticket,
            vec![ContentPart::text("hi")],
            &GoneHost::default(),
        )
        .await;
    assert!(matches!(outcome, Err(TurnError::NoModel)), "{outcome:?}");
    drop(ticket);
    assert!(!no_model.cancel());
}

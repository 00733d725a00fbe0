//! One prompt through the agent core with a scripted model, as the assists' suites drive it:
//! a front end that allows every call and records what it was shown.

use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use hearth::agent::{AgentCore, StopReason};
use hearth::host::{LocalClientOps, LocalFrontEnd};
use hearth_backend::{ContentPart, FinishReason, Role};
use hearth_conversation::{AgentEvent, PermissionAnswer, Reach, ToolCard};

use super::fake_backend::{FakeBackend, agent_core_with, finish, text};

#[derive(Default)]
pub struct Front {
    events: Mutex<Vec<AgentEvent>>,
}

#[async_trait]
impl LocalFrontEnd for Front {
    async fn request_permission(&self, _card: &ToolCard, _reach: Reach) -> PermissionAnswer {
        PermissionAnswer::AllowOnce
    }

    fn send(&self, event: AgentEvent) {
        self.events.lock().unwrap().push(event);
    }
}

impl Front {
    pub fn answer(&self) -> String {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                AgentEvent::AgentText { text } => Some(text.clone()),
                _ => None,
            })
            .collect()
    }

    pub fn card_titles(&self) -> Vec<String> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                AgentEvent::ToolCallStarted { card } => Some(card.title.clone()),
                _ => None,
            })
            .collect()
    }
}

pub fn core(backend: &FakeBackend, data: &Path, format: &str, agent: &str) -> Arc<AgentCore> {
    Arc::new(agent_core_with(backend, data, format, agent))
}

pub fn reply(backend: &FakeBackend, answer: &str) {
    backend.push(vec![text(answer), finish(FinishReason::Stop)]);
}

/// Runs one prompt in `project`; returns the stop reason and the front end.
pub async fn prompt(
    backend: &FakeBackend,
    project: &Path,
    format: &str,
    words: &str,
) -> (StopReason, Arc<Front>) {
    prompt_with(backend, project, format, "", words).await
}

/// [`prompt`] with `agent` as the config's `[agent]` table.
pub async fn prompt_with(
    backend: &FakeBackend,
    project: &Path,
    format: &str,
    agent: &str,
    words: &str,
) -> (StopReason, Arc<Front>) {
    let data = tempfile::tempdir().unwrap();
    let core = core(backend, data.path(), format, agent);
    let session = core.new_session(
        project.to_path_buf(),
        core.default_settings(None, None, &[]),
    );
    let front = Arc::new(Front::default());
    let client = LocalClientOps::new(front.clone());
    let ticket = session.begin_turn();
    let stop = core
        .run_prompt(&session, &ticket, vec![ContentPart::text(words)], &client)
        .await
        .unwrap();
    (stop, front)
}

/// The text request `n` sent after the model's last message (tool results, nudges, and the
/// reminder of the task that follows tool results).
pub fn last_message(backend: &FakeBackend, n: usize) -> String {
    let request = &backend.requests()[n];
    let start = request
        .messages
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .map_or(0, |i| i + 1);
    request.messages[start..]
        .iter()
        .map(|m| m.plain_text())
        .collect::<Vec<_>>()
        .join("\n")
}

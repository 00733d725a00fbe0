//! Builders shared by the store's tests.

use std::path::PathBuf;

use base64::Engine as _;
use chrono::{TimeZone, Utc};
use hearth_backend::ContentPart;
use hearth_conversation::{
    AgentEvent, HistoryEntry, PlanEntry, PlanStatus, SessionId, ToolCallId, ToolCallRecord,
    ToolCard, ToolCardUpdate, ToolContent, ToolKind, ToolStatus,
};
use serde_json::json;

use super::record::{Record, Round, RoundOutcome, UsageRecord};
use super::sessions::Store;

/// A store in a fresh temporary directory, and a project directory inside it.
pub(crate) struct Fixture {
    pub dir: tempfile::TempDir,
    pub store: Store,
    pub cwd: PathBuf,
}

impl Fixture {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().join("data"));
        let cwd = dir.path().join("project");
        std::fs::create_dir_all(&cwd).unwrap();
        Self { dir, store, cwd }
    }

    /// Another project directory.
    pub(crate) fn project(&self, name: &str) -> PathBuf {
        let cwd = self.dir.path().join(name);
        std::fs::create_dir_all(&cwd).unwrap();
        cwd
    }
}

/// A small PNG-like payload, base64 as clients send it.
pub(crate) fn image() -> ContentPart {
    let bytes: Vec<u8> = (0..=255u8).cycle().take(3000).collect();
    ContentPart::Image {
        mime_type: "image/png".into(),
        data: base64::engine::general_purpose::STANDARD.encode(bytes),
    }
}

/// A plain round: one prompt, one answer.
pub(crate) fn simple_round(number: u64, prompt: &str) -> Round {
    Round {
        number,
        at: Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap(),
        user: vec![ContentPart::text(prompt)],
        events: vec![AgentEvent::AgentText {
            text: format!("answer {number}"),
        }],
        history: vec![
            HistoryEntry::User {
                content: vec![ContentPart::text(prompt)],
            },
            HistoryEntry::Assistant {
                text: format!("answer {number}"),
                reasoning: None,
                tool_calls: Vec::new(),
            },
        ],
        usage: Some(UsageRecord {
            used: 100 * number,
            size: 32_768,
        }),
        outcome: RoundOutcome::Completed,
    }
}

/// A round with everything a replay must show: chunked text and thoughts, an image, a
/// successful edit with a diff, a failed command, a plan and usage.
pub(crate) fn rich_round(number: u64) -> Round {
    let edit = ToolCallId::new("call_edit");
    let run = ToolCallId::new("call_run");
    let card = |id: &ToolCallId, kind, title: &str| ToolCard {
        id: id.clone(),
        title: title.into(),
        kind,
        status: ToolStatus::Pending,
        locations: Vec::new(),
        content: Vec::new(),
        raw_input: json!({"path": "src/main.rs"}),
    };
    let user = vec![ContentPart::text("Fix the bug shown here"), image()];
    Round {
        number,
        at: Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 6).unwrap(),
        user: user.clone(),
        events: vec![
            AgentEvent::AgentThought {
                text: "Let me ".into(),
            },
            AgentEvent::AgentThought {
                text: "look.".into(),
            },
            AgentEvent::AgentText {
                text: "I will ".into(),
            },
            AgentEvent::AgentText {
                text: "edit it.".into(),
            },
            AgentEvent::Plan {
                entries: vec![PlanEntry {
                    content: "edit main.rs".into(),
                    status: PlanStatus::InProgress,
                }],
            },
            AgentEvent::ToolCallStarted {
                card: card(&edit, ToolKind::Edit, "Edit src/main.rs"),
            },
            AgentEvent::ToolCallUpdated {
                id: edit.clone(),
                update: ToolCardUpdate {
                    status: Some(ToolStatus::Completed),
                    content: Some(vec![ToolContent::Diff {
                        path: "src/main.rs".into(),
                        old_text: Some("let x = 1;".into()),
                        new_text: "let x = 2;".into(),
                    }]),
                    ..Default::default()
                },
            },
            AgentEvent::ToolCallStarted {
                card: card(&run, ToolKind::Execute, "cargo test"),
            },
            AgentEvent::ToolCallUpdated {
                id: run.clone(),
                update: ToolCardUpdate {
                    status: Some(ToolStatus::Failed),
                    content: Some(vec![ToolContent::Text {
                        text: "exit 101".into(),
                    }]),
                    raw_output: Some(json!({"exit_code": 101})),
                    ..Default::default()
                },
            },
            AgentEvent::Usage {
                used: 2048,
                size: 32_768,
            },
        ],
        history: vec![
            HistoryEntry::User { content: user },
            HistoryEntry::Assistant {
                text: "I will edit it.".into(),
                reasoning: Some("Let me look.".into()),
                tool_calls: vec![
                    ToolCallRecord {
                        id: edit.clone(),
                        name: "edit_file".into(),
                        arguments: json!({"path": "src/main.rs"}),
                    },
                    ToolCallRecord {
                        id: run.clone(),
                        name: "bash".into(),
                        arguments: json!({"command": "cargo test"}),
                    },
                ],
            },
            HistoryEntry::ToolResult {
                call_id: edit,
                name: "edit_file".into(),
                output: "edited".into(),
                is_error: false,
            },
            HistoryEntry::ToolResult {
                call_id: run,
                name: "bash".into(),
                output: "exit 101".into(),
                is_error: true,
            },
        ],
        usage: Some(UsageRecord {
            used: 2048,
            size: 32_768,
        }),
        outcome: RoundOutcome::Completed,
    }
}

/// Writes `records` to a new session through a writer and flushes.
pub(crate) async fn write_session(
    fx: &Fixture,
    cwd: &std::path::Path,
    records: Vec<Record>,
) -> SessionId {
    let id = SessionId::generate();
    let writer = fx.store.create(&id, cwd).unwrap();
    for record in records {
        writer.append(record);
    }
    writer.flush().await.unwrap();
    id
}

/// The rounds of a loaded session, by number.
pub(crate) fn round_numbers(records: &[Record]) -> Vec<u64> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Round(round) => Some(round.number),
            _ => None,
        })
        .collect()
}

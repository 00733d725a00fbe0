//! Conversations for the context tests, built from compact specs.

use hearth_backend::ContentPart;
use hearth_conversation::{HistoryEntry, ToolCallId, ToolCallRecord};
use proptest::prelude::*;

use super::tokens::TokenCounter;

/// Counts one token per character: simple, exact, easy to reason about in tests.
pub struct CharCounter;

impl TokenCounter for CharCounter {
    fn count(&self, text: &str) -> usize {
        text.chars().count()
    }
}

/// Code-like text of `lines` lines, different for each `seed`.
pub fn code(lines: usize, seed: usize) -> String {
    (0..lines)
        .map(|i| format!("    let value_{seed}_{i} = compute({i}, \"src/mod_{seed}.rs\");\n"))
        .collect()
}

pub fn user(text: impl Into<String>) -> HistoryEntry {
    HistoryEntry::User {
        content: vec![ContentPart::text(text)],
    }
}

pub fn image() -> ContentPart {
    ContentPart::Image {
        mime_type: "image/png".into(),
        data: "iVBORw0KGgo=".into(),
    }
}

/// An assistant message calling `read_file` on one file per output, then the results.
pub fn tool_round(
    seed: usize,
    prose: &str,
    reasoning: Option<&str>,
    outputs: &[usize],
) -> Vec<HistoryEntry> {
    let calls: Vec<ToolCallRecord> = outputs
        .iter()
        .enumerate()
        .map(|(k, _)| ToolCallRecord {
            id: ToolCallId::new(format!("call_{seed}_{k}")),
            name: "read_file".into(),
            arguments: serde_json::json!({ "path": format!("src/file_{seed}_{k}.rs") }),
        })
        .collect();
    let mut out = vec![HistoryEntry::Assistant {
        text: prose.to_string(),
        reasoning: reasoning.map(str::to_string),
        tool_calls: calls.clone(),
    }];
    for (call, lines) in calls.iter().zip(outputs) {
        out.push(HistoryEntry::ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            output: code(*lines, seed * 10 + out.len()),
            is_error: false,
        });
    }
    out
}

/// One round of a random conversation.
#[derive(Debug, Clone)]
pub struct RoundSpec {
    /// A user message first: its length in lines and whether it carries an image.
    pub user: Option<(usize, bool)>,
    pub prose_lines: usize,
    pub reasoning_lines: Option<usize>,
    /// Output length in lines of each tool call.
    pub outputs: Vec<usize>,
}

pub fn round_spec() -> impl Strategy<Value = RoundSpec> {
    (
        prop::option::weighted(0.3, (0usize..40, prop::bool::weighted(0.2))),
        0usize..20,
        prop::option::weighted(0.5, 1usize..60),
        prop::collection::vec(
            prop_oneof![4 => 0usize..80, 1 => 200usize..800, 1 => 1000usize..2000],
            0..3,
        ),
    )
        .prop_map(|(user, prose_lines, reasoning_lines, outputs)| RoundSpec {
            user,
            prose_lines,
            reasoning_lines,
            outputs,
        })
}

/// The history a list of rounds describes; it always starts with a user message.
pub fn build(rounds: &[RoundSpec]) -> Vec<HistoryEntry> {
    let mut history = vec![user("Please fix the failing build in src/lib.rs.")];
    for (n, round) in rounds.iter().enumerate() {
        if let Some((lines, with_image)) = round.user {
            let mut content = vec![ContentPart::text(format!(
                "Now step {n}.\n{}",
                code(lines, n)
            ))];
            if with_image {
                content.push(image());
            }
            history.push(HistoryEntry::User { content });
        }
        let prose = code(round.prose_lines, 1000 + n);
        let reasoning = round.reasoning_lines.map(|l| code(l, 2000 + n));
        history.extend(tool_round(n, &prose, reasoning.as_deref(), &round.outputs));
    }
    history
}

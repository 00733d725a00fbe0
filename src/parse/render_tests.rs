//! Golden tests: the rendered prompt of a conversation with tools, calls and results, byte for
//! byte, in both in-band formats (and the native message shape).

use hearth_backend::{ContentPart, Message, Role};
use hearth_conversation::{HistoryEntry, ToolCallId, ToolCallRecord};
use serde_json::json;

use crate::parse::test_support::tools;
use crate::parse::{ResolvedFormat, render_messages, render_tool_block, stop_strings};

fn call(id: &str, name: &str, arguments: serde_json::Value) -> ToolCallRecord {
    ToolCallRecord {
        id: ToolCallId::new(id),
        name: name.into(),
        arguments,
    }
}

fn result(id: &str, name: &str, output: &str) -> HistoryEntry {
    HistoryEntry::ToolResult {
        call_id: ToolCallId::new(id),
        name: name.into(),
        output: output.into(),
        is_error: false,
    }
}

fn user(text: &str) -> HistoryEntry {
    HistoryEntry::User {
        content: vec![ContentPart::text(text)],
    }
}

fn conversation() -> Vec<HistoryEntry> {
    vec![
        user("Show src/main.rs"),
        HistoryEntry::Assistant {
            text: String::new(),
            reasoning: Some("Old reasoning, dropped.".into()),
            tool_calls: vec![call("c1", "read_file", json!({"path": "src/main.rs"}))],
        },
        result("c1", "read_file", "fn main() {}"),
        HistoryEntry::Assistant {
            text: "It is an empty main.".into(),
            reasoning: None,
            tool_calls: vec![],
        },
        user("Add a test and run it"),
        HistoryEntry::Assistant {
            text: "I'll add a test.".into(),
            reasoning: Some("\nWrite the test, then run cargo.\n".into()),
            tool_calls: vec![
                call(
                    "c2",
                    "write_file",
                    json!({"path": "tests/it.rs", "content": "#[test]\nfn it() { assert!(true); }\n"}),
                ),
                call(
                    "c3",
                    "run",
                    json!({"command": "cargo test", "timeout": 60, "env": {"RUST_LOG": "débug"}}),
                ),
            ],
        },
        result("c2", "write_file", "wrote 38 bytes"),
        result("c3", "run", "test it ... ok"),
        HistoryEntry::Assistant {
            text: "The test passes.".into(),
            reasoning: Some("All good.".into()),
            tool_calls: vec![],
        },
    ]
}

/// The messages as ChatML, the bytes a Qwen server builds from them.
fn chatml(messages: &[Message]) -> String {
    let mut out = String::new();
    for m in messages {
        let role = match m.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        };
        out.push_str(&format!(
            "<|im_start|>{role}\n{}<|im_end|>\n",
            m.plain_text()
        ));
    }
    out
}

fn golden(name: &str, actual: &str) {
    let path = format!("{}/tests/golden/parse/{name}", env!("CARGO_MANIFEST_DIR"));
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert!(
        expected == actual,
        "{name} differs from the golden file; run with UPDATE_GOLDEN=1 and review the diff\n{actual}"
    );
}

#[test]
fn hermes_prompt_matches_golden() {
    let msgs = render_messages(
        ResolvedFormat::Hermes,
        "You are a coding agent.",
        &tools(),
        &conversation(),
    );
    golden("hermes.txt", &chatml(&msgs));
}

#[test]
fn xml_prompt_matches_golden() {
    let msgs = render_messages(
        ResolvedFormat::Xml,
        "You are a coding agent.",
        &tools(),
        &conversation(),
    );
    golden("xml.txt", &chatml(&msgs));
}

#[test]
fn native_messages_match_golden() {
    let msgs = render_messages(
        ResolvedFormat::Native,
        "You are a coding agent.",
        &tools(),
        &conversation(),
    );
    golden(
        "native.json",
        &(serde_json::to_string_pretty(&msgs).unwrap() + "\n"),
    );
}

#[test]
fn structure_of_rendered_history() {
    let msgs = render_messages(ResolvedFormat::Hermes, "S", &tools(), &conversation());
    let roles: Vec<Role> = msgs.iter().map(|m| m.role).collect();
    use Role::*;
    assert_eq!(
        roles,
        vec![
            System, User, Assistant, User, Assistant, User, Assistant, User, Assistant
        ]
    );
    // Both results of the second round share one user turn that starts and ends with the wrapper.
    let results = msgs[7].plain_text();
    assert!(results.starts_with("<tool_response>") && results.ends_with("</tool_response>"));
    assert_eq!(results.matches("<tool_response>").count(), 2);
    // Reasoning is kept only after the last real user turn.
    assert!(!msgs[2].plain_text().contains("Old reasoning"));
    assert!(msgs[6].plain_text().starts_with(
        "<think>\nWrite the test, then run cargo.\n</think>\n\nI'll add a test.\n<tool_call>"
    ));
    assert!(
        msgs[8]
            .plain_text()
            .starts_with("<think>\nAll good.\n</think>\n\n")
    );
    // Arguments are rendered as objects, never as strings.
    assert!(
        msgs[2]
            .plain_text()
            .contains("\"arguments\": {\"path\": \"src/main.rs\"}")
    );
}

#[test]
fn tool_block_and_stops() {
    assert_eq!(render_tool_block(ResolvedFormat::Native, &tools()), "");
    assert_eq!(render_tool_block(ResolvedFormat::Hermes, &[]), "");
    assert_eq!(
        stop_strings(ResolvedFormat::Hermes),
        vec!["<tool_response>", "<|im_start|>"]
    );
    assert!(
        !stop_strings(ResolvedFormat::Xml)
            .iter()
            .any(|s| s.contains("tool_call"))
    );
    let msgs = render_messages(ResolvedFormat::Hermes, "", &[], &[user("hi")]);
    assert_eq!(
        msgs.len(),
        1,
        "no system message without system text or tools"
    );
}

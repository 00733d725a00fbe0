//! The editor's view of a turn as lines: tool cards (`call <label> <kind> <status> [content]`,
//! `update <label> <status> [content]`), permission questions (`ask <label>`) and the client
//! requests (`read <path>`, `write <path>`, `terminal/...`), in the order the editor saw them.
//! Labels are the test's names for the scripted calls, since hearth gives calls its own ids.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::editor_client::Editor;
use super::model_requests::{call_ids, tool_message};

/// The tool cards, permission questions and client requests, in the order the editor saw
/// them, one line each (paths relative to `root`).
pub fn timeline(editor: &Editor, root: &Path, calls: &Calls) -> Vec<String> {
    let rel = |p: &Value| {
        let p = PathBuf::from(p.as_str().unwrap());
        p.strip_prefix(root).unwrap_or(&p).display().to_string()
    };
    let content = |u: &Value| match u["content"].as_array() {
        Some(items) if !items.is_empty() => {
            let kinds: Vec<&str> = items.iter().map(|c| c["type"].as_str().unwrap()).collect();
            format!(" [{}]", kinds.join(","))
        }
        _ => String::new(),
    };
    editor
        .log()
        .iter()
        .filter_map(|l| {
            let p = &l.params;
            match l.method {
                "session/update" => {
                    let u = &p["update"];
                    let id = calls.label(u["toolCallId"].as_str().unwrap_or_default());
                    let status = u["status"].as_str();
                    match u["sessionUpdate"].as_str().unwrap() {
                        // A new card's absent fields hold the schema's defaults.
                        "tool_call" => Some(format!(
                            "call {id} {} {}{}",
                            u["kind"].as_str().unwrap_or("other"),
                            status.unwrap_or("pending"),
                            content(u)
                        )),
                        // An update's absent fields leave the card as it was.
                        "tool_call_update" => Some(format!(
                            "update {id} {}{}",
                            status.unwrap_or("-"),
                            content(u)
                        )),
                        _ => None,
                    }
                }
                "session/request_permission" => Some(format!(
                    "ask {}",
                    calls.label(p["toolCall"]["toolCallId"].as_str().unwrap())
                )),
                "fs/read_text_file" => Some(format!("read {}", rel(&p["path"]))),
                "fs/write_text_file" => Some(format!("write {}", rel(&p["path"]))),
                other => Some(other.to_string()),
            }
        })
        .collect()
}

/// The non-blank lines of `text`, trimmed: expected timelines written as indented text.
pub fn lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

/// hearth gives each call its own id (whatever the server sent): the scripted calls' labels,
/// matched in order with the ids in the assistant messages of a request body.
pub struct Calls(Vec<(String, &'static str)>);

impl Calls {
    pub fn from_body(body: &Value, labels: &[&'static str]) -> Calls {
        let ids = call_ids(body);
        assert_eq!(ids.len(), labels.len(), "{ids:?} vs {labels:?}");
        Calls(ids.into_iter().zip(labels.iter().copied()).collect())
    }

    pub fn label(&self, id: &str) -> String {
        self.0
            .iter()
            .find(|(i, _)| i == id)
            .map_or_else(|| format!("?{id}"), |(_, l)| (*l).to_string())
    }

    pub fn id(&self, label: &str) -> &str {
        &self.0.iter().find(|(_, l)| *l == label).unwrap().0
    }

    /// The content of the `tool` message answering the call `label` in a request body.
    pub fn tool_message(&self, body: &Value, label: &str) -> String {
        tool_message(body, self.id(label))
    }

    /// The first `diff` content of the last update of the call `label`.
    pub fn last_diff(&self, editor: &Editor, label: &str) -> Value {
        last_diff(editor, self.id(label))
    }
}

/// The first `diff` content of the last update of `id`.
pub fn last_diff(editor: &Editor, id: &str) -> Value {
    editor
        .requests("session/update")
        .into_iter()
        .rev()
        .map(|n| n["update"].clone())
        .find(|u| u["toolCallId"] == id && u["sessionUpdate"] == "tool_call_update")
        .and_then(|u| {
            u["content"]
                .as_array()
                .and_then(|c| c.iter().find(|c| c["type"] == "diff").cloned())
        })
        .unwrap_or_else(|| panic!("no diff on {id}"))
}

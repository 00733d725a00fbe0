//! Edits to names the request did not name (the edit_scope assist). Asked to "change
//! MAX_RETRIES in settings.py to 5", the 0.5B sends one `edit_file` call with two edits:
//! `MAX_RETRIES = 3` → `MAX_RETRIES = 5`, and `TIMEOUT = 30` → `TIMEOUT = 5`, the pattern
//! applied to the line beside it. When the request names the settings it is about, and one
//! call's edits change the value of those and also of others it never mentions, the others
//! are not made: the call runs with the named ones, and its result says what was left out
//! and why. Only ever narrows a call; never adds to one.

use std::collections::BTreeSet;

use hearth_conversation::{HistoryEntry, ToolCallId, ToolCallRecord};

use crate::tools::EDIT_FILE;

/// Words that open a binding before its name (`const X = 1`, `pub static X: u8 = 1`).
const BINDING_WORDS: [&str; 8] = [
    "const", "let", "static", "pub", "export", "var", "mut", "readonly",
];

/// What was left out of which call.
pub type LeftOut = Vec<(ToolCallId, String)>;

/// `calls` with each [`narrowed`] against `request` (none when it is `None`), and what was
/// left out of which.
pub fn narrow_calls(
    calls: Vec<ToolCallRecord>,
    request: Option<&str>,
) -> (Vec<ToolCallRecord>, LeftOut) {
    let Some(request) = request else {
        return (calls, Vec::new());
    };
    let mut left_out = Vec::new();
    let calls = calls
        .into_iter()
        .map(|call| match narrowed(&call, request) {
            Some((narrower, note)) => {
                tracing::info!(
                    note,
                    "an edit to what the request did not name was left out"
                );
                left_out.push((call.id.clone(), note));
                narrower
            }
            None => call,
        })
        .collect();
    (calls, left_out)
}

/// Ends the result of each call in `left_out` with what was left out of it.
pub fn note_left_out(results: &mut [HistoryEntry], left_out: &LeftOut) {
    for result in results {
        if let HistoryEntry::ToolResult {
            call_id, output, ..
        } = result
            && let Some((_, note)) = left_out.iter().find(|(id, _)| id == call_id)
        {
            output.push_str(note);
        }
    }
}

/// `call` with the edits that change a binding no word of `request` names taken out, where
/// another of its edits changes one the request names; `None` when nothing is taken out.
/// The second value is what the call's result should add.
pub fn narrowed(call: &ToolCallRecord, request: &str) -> Option<(ToolCallRecord, String)> {
    if call.name != EDIT_FILE {
        return None;
    }
    let edits = call.arguments.get("edits")?.as_array()?;
    if edits.len() < 2 {
        return None;
    }
    let named = request_names(request);
    let mentions = |names: &BTreeSet<String>| names.iter().any(|n| named.contains(n));
    // Some edit is about what the request names (binds it, changed or not)...
    if !edits.iter().map(bound_names).any(|names| mentions(&names)) {
        return None;
    }
    // ...and others change only bindings it never mentions.
    let changed: Vec<BTreeSet<String>> = edits.iter().map(rebound_names).collect();
    let off_topic: Vec<usize> = edits
        .iter()
        .enumerate()
        .filter(|(i, edit)| !changed[*i].is_empty() && !mentions(&bound_names(edit)))
        .map(|(i, _)| i)
        .collect();
    if off_topic.is_empty() {
        return None;
    }
    let kept: Vec<serde_json::Value> = edits
        .iter()
        .enumerate()
        .filter(|(i, _)| !off_topic.contains(i))
        .map(|(_, e)| e.clone())
        .collect();
    let mut narrowed = call.clone();
    narrowed.arguments["edits"] = serde_json::Value::Array(kept);
    let left_out: Vec<String> = off_topic
        .iter()
        .map(|&i| {
            let names: Vec<&str> = changed[i].iter().map(String::as_str).collect();
            format!("edit {} (it changes {})", i + 1, names.join(", "))
        })
        .collect();
    let note = format!(
        "\nNot made: {}, which my request does not mention. Change only what I asked for.",
        left_out.join("; ")
    );
    Some((narrowed, note))
}

/// The names in `request` that look like code: with `_`, in capitals, or camelCase.
fn request_names(request: &str) -> BTreeSet<String> {
    request
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| {
            let letters = w.chars().filter(|c| c.is_ascii_alphabetic()).count();
            letters >= 2
                && w.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && (w.contains('_')
                    || w.chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
                    || (w.starts_with(|c: char| c.is_ascii_lowercase())
                        && w.chars().any(|c| c.is_ascii_uppercase())))
        })
        .map(str::to_string)
        .collect()
}

/// The names `edit` binds, in its `old_text` or its `new_text`.
fn bound_names(edit: &serde_json::Value) -> BTreeSet<String> {
    let (old, new) = edit_texts(edit);
    bindings(old)
        .into_iter()
        .chain(bindings(new))
        .map(|(name, _)| name)
        .collect()
}

/// The names whose binding line `edit` changes: bound in its `old_text` and again, to
/// something else, in its `new_text`.
fn rebound_names(edit: &serde_json::Value) -> BTreeSet<String> {
    let (old, new) = edit_texts(edit);
    let (old, new) = (bindings(old), bindings(new));
    old.iter()
        .filter(|(name, line)| {
            new.iter()
                .any(|(other, new_line)| other == name && new_line != line)
        })
        .map(|(name, _)| name.clone())
        .collect()
}

/// An edit's `old_text` and `new_text` (empty where missing).
fn edit_texts(edit: &serde_json::Value) -> (&str, &str) {
    let text = |key: &str| edit.get(key).and_then(|v| v.as_str()).unwrap_or_default();
    (text("old_text"), text("new_text"))
}

/// The `NAME = …` / `NAME: … = …` lines of `text`, by name.
fn bindings(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| {
            let mut rest = line.trim();
            loop {
                let word = rest.split_whitespace().next().unwrap_or_default();
                if !BINDING_WORDS.contains(&word) {
                    break;
                }
                rest = rest[word.len()..].trim_start();
            }
            let end = rest
                .find(|c: char| !c.is_alphanumeric() && c != '_')
                .unwrap_or(rest.len());
            let (name, after) = rest.split_at(end);
            let after = after.trim_start();
            let binds = (after.starts_with('=') && !after.starts_with("=="))
                || (after.starts_with(':') && after.contains('='));
            (!name.is_empty() && binds).then(|| (name.to_string(), line.trim().to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_conversation::ToolCallId;
    use serde_json::json;

    fn edit_call(edits: serde_json::Value) -> ToolCallRecord {
        ToolCallRecord {
            id: ToolCallId::new("c1"),
            name: EDIT_FILE.into(),
            arguments: json!({"path": "settings.py", "edits": edits}),
        }
    }

    #[test]
    fn a_setting_the_request_never_names_is_left_as_it_was() {
        let call = edit_call(json!([
            {"old_text": "TIMEOUT = 30", "new_text": "TIMEOUT = 5"},
            {"old_text": "MAX_RETRIES = 3", "new_text": "MAX_RETRIES = 5"},
        ]));
        let (narrower, note) = narrowed(&call, "Change MAX_RETRIES in settings.py to 5.").unwrap();
        assert_eq!(
            narrower.arguments["edits"],
            json!([{"old_text": "MAX_RETRIES = 3", "new_text": "MAX_RETRIES = 5"}])
        );
        assert_eq!(narrower.arguments["path"], "settings.py");
        assert_eq!(
            note,
            "\nNot made: edit 1 (it changes TIMEOUT), which my request does not mention. Change only what I asked for."
        );
        // Rust and TypeScript bindings read the same.
        let call = edit_call(json!([
            {"old_text": "pub const MAX_RETRIES: u32 = 3;", "new_text": "pub const MAX_RETRIES: u32 = 5;"},
            {"old_text": "export const timeoutMs = 30;", "new_text": "export const timeoutMs = 5;"},
        ]));
        assert!(narrowed(&call, "set MAX_RETRIES to 5").is_some());
        // The named setting already as asked: the other edit is still left out.
        let call = edit_call(json!([
            {"old_text": "TIMEOUT = 30", "new_text": "TIMEOUT = 5"},
            {"old_text": "MAX_RETRIES = 5", "new_text": "MAX_RETRIES = 5"},
        ]));
        let (narrower, _) = narrowed(&call, "Change MAX_RETRIES to 5.").unwrap();
        assert_eq!(
            narrower.arguments["edits"],
            json!([{"old_text": "MAX_RETRIES = 5", "new_text": "MAX_RETRIES = 5"}])
        );
    }

    #[test]
    fn calls_that_stay_on_the_request_run_as_they_are() {
        let request = "Change MAX_RETRIES in settings.py to 5.";
        for edits in [
            // One edit: nothing to weigh it against.
            json!([{"old_text": "TIMEOUT = 30", "new_text": "TIMEOUT = 5"}]),
            // Only named settings.
            json!([
                {"old_text": "MAX_RETRIES = 3", "new_text": "MAX_RETRIES = 5"},
                {"old_text": "# retries: 3", "new_text": "# retries: 5"},
            ]),
            // No named setting changed: the request's words may name it otherwise.
            json!([
                {"old_text": "TIMEOUT = 30", "new_text": "TIMEOUT = 5"},
                {"old_text": "LOG = 1", "new_text": "LOG = 2"},
            ]),
            // A comparison is no binding; an unchanged binding is not changed.
            json!([
                {"old_text": "MAX_RETRIES = 3", "new_text": "MAX_RETRIES = 5"},
                {"old_text": "if TIMEOUT == 30:\n    x = 1", "new_text": "if TIMEOUT == 5:\n    x = 1"},
            ]),
        ] {
            assert!(
                narrowed(&edit_call(edits.clone()), request).is_none(),
                "{edits}"
            );
        }
        // A request that names no code narrows nothing.
        let call = edit_call(json!([
            {"old_text": "TIMEOUT = 30", "new_text": "TIMEOUT = 5"},
            {"old_text": "RETRIES = 3", "new_text": "RETRIES = 5"},
        ]));
        assert!(narrowed(&call, "make it faster").is_none());
    }
}

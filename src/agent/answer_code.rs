//! The code of the answer, for a file the turn left broken (part of the check_writes assist).
//! Told that its hello.py is not valid Python, the 0.5B answers with the right program in a
//! fenced block and leaves the file as it was. When a file the turn wrote still does not parse
//! and exactly one of the answer's blocks in its language does, hearth makes the write the
//! model left out: a `write_file` call of the block, added to the
//! answer's round and run through the same permission policy as any call.

use hearth_conversation::{HistoryEntry, ToolCallId, ToolCallRecord};
use serde_json::json;

use super::file_request::FileAsk;
use super::turn_context::TurnContext;
use super::write_check::{Syntax, checkable_file};
use crate::tools::WRITE_FILE;

/// The call that writes the answer's code block to a file the turn wrote and left broken.
/// `turn` is the turn's entries, its prompt first; the answer is all it said, as the user saw
/// it (the code often comes a round before an echo of the write's result).
pub async fn write_from_answer(
    ctx: &TurnContext<'_>,
    turn: &[HistoryEntry],
) -> Option<ToolCallRecord> {
    let answer = turn_answer(turn);
    for path in written_paths(turn).into_iter().rev() {
        let Some((syntax, text)) = checkable_file(ctx, path).await else {
            continue;
        };
        if syntax.complaint_in(ctx, &text).await.is_none() {
            continue;
        }
        // The blocks in the file's language that parse: exactly one, or which was meant is
        // not known (a block that does not parse is an echo of a result, or broken code).
        let mut parsing = Vec::new();
        for (language, code) in fenced_blocks(&answer) {
            if language_of(&language) == Some(syntax)
                && syntax.complaint_in(ctx, &code).await.is_none()
            {
                parsing.push(code);
            }
        }
        // A parser cut short by a cancel said nothing: nothing is written then.
        if ctx.cancel.is_cancelled() {
            return None;
        }
        let ([code], false) = (parsing.as_slice(), parsing.len() > 1) else {
            continue;
        };
        if *code == text {
            continue;
        }
        return Some(ToolCallRecord {
            id: ToolCallId::generate(),
            name: WRITE_FILE.to_string(),
            arguments: json!({ "path": path, "content": code }),
        });
    }
    None
}

/// The file ask for a file the turn wrote whole and left broken (the answer held no block to
/// put in it): the last such file, asked for again with its parser's complaint.
pub async fn broken_write_ask(ctx: &TurnContext<'_>, turn: &[HistoryEntry]) -> Option<FileAsk> {
    for path in written_paths(turn).into_iter().rev() {
        let Some((syntax, text)) = checkable_file(ctx, path).await else {
            continue;
        };
        if let Some(complaint) = syntax.complaint_in(ctx, &text).await {
            return Some(FileAsk {
                name: path.to_string(),
                held: None,
                broken: Some(format!("it is not valid {}: {complaint}", syntax.name())),
            });
        }
    }
    None
}

/// Everything the turn's rounds said, as the user read it, joined by line breaks.
pub(super) fn turn_answer(turn: &[HistoryEntry]) -> String {
    let said: Vec<&str> = turn
        .iter()
        .filter_map(|entry| match entry {
            HistoryEntry::Assistant { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    said.join("\n")
}

/// The paths the turn's whole-file writes that succeeded named, first written first, once
/// each. An edited file is left out: it may have been broken before the turn (a file being
/// worked on), and a block of the answer is a snippet of it far more often than the whole.
/// A file the model wrote whole already holds only what the model gave it.
fn written_paths(turn: &[HistoryEntry]) -> Vec<&str> {
    let mut paths: Vec<&str> = Vec::new();
    for entry in turn {
        let HistoryEntry::ToolResult {
            call_id,
            is_error: false,
            ..
        } = entry
        else {
            continue;
        };
        let path = turn.iter().find_map(|e| match e {
            HistoryEntry::Assistant { tool_calls, .. } => tool_calls
                .iter()
                .find(|c| &c.id == call_id && c.name == WRITE_FILE)
                .and_then(|c| c.arguments.get("path")?.as_str()),
            _ => None,
        });
        if let Some(path) = path
            && !paths.contains(&path)
        {
            paths.push(path);
        }
    }
    paths
}

/// The file type a fence's language names.
pub(super) fn language_of(language: &str) -> Option<Syntax> {
    match language.to_ascii_lowercase().as_str() {
        "python" | "python3" | "py" => Some(Syntax::Python),
        "json" => Some(Syntax::Json),
        "toml" => Some(Syntax::Toml),
        "sh" | "shell" | "bash" => Some(Syntax::Shell),
        _ => None,
    }
}

/// The fenced blocks of `text`: each block's language and its lines (ending in a newline). A
/// fence line that closes a block and opens another at once (`` `````` ``json``, as the 0.5B
/// writes two blocks) does both; an unclosed block is not a block.
pub(super) fn fenced_blocks(text: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let Some(after) = trimmed.strip_prefix("```") else {
            if let Some((_, code)) = open.as_mut() {
                code.push_str(line);
                code.push('\n');
            }
            continue;
        };
        match open.take() {
            Some(block) => {
                blocks.push(block);
                if let Some(language) = after.strip_prefix("```") {
                    open = Some((language.trim().to_string(), String::new()));
                }
            }
            None => open = Some((after.trim().to_string(), String::new())),
        }
    }
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::EDIT_FILE;

    #[test]
    fn blocks_are_read_with_their_language_and_a_double_fence_closes_and_opens() {
        let text = "Here:\n```python\nprint('hi')\n```\nand\n```json\n{\"a\": 1}\n``````json\n[2]\n```\n```sh\nunclosed\n";
        assert_eq!(
            fenced_blocks(text),
            [
                ("python".to_string(), "print('hi')\n".to_string()),
                ("json".to_string(), "{\"a\": 1}\n".to_string()),
                ("json".to_string(), "[2]\n".to_string()),
            ]
        );
        assert_eq!(language_of("Python"), Some(Syntax::Python));
        assert_eq!(language_of("bash"), Some(Syntax::Shell));
        assert_eq!(language_of("rust"), None);
        assert_eq!(language_of(""), None);
    }

    #[test]
    fn only_whole_file_writes_that_succeeded_count_once_each() {
        let call = |path: &str, name: &str| ToolCallRecord {
            id: ToolCallId::generate(),
            name: name.into(),
            arguments: json!({ "path": path }),
        };
        let (a, b, a_again, read, failed) = (
            call("a.py", WRITE_FILE),
            call("b.json", EDIT_FILE),
            call("a.py", EDIT_FILE),
            call("c.py", "read_file"),
            call("d.py", WRITE_FILE),
        );
        let result = |c: &ToolCallRecord, is_error: bool| HistoryEntry::ToolResult {
            call_id: c.id.clone(),
            name: c.name.clone(),
            output: String::new(),
            is_error,
        };
        let turn = vec![
            HistoryEntry::Assistant {
                text: String::new(),
                reasoning: None,
                tool_calls: vec![
                    a.clone(),
                    b.clone(),
                    a_again.clone(),
                    read.clone(),
                    failed.clone(),
                ],
            },
            result(&a, false),
            result(&b, false),
            result(&a_again, false),
            result(&read, false),
            result(&failed, true),
        ];
        assert_eq!(
            written_paths(&turn),
            ["a.py"],
            "b.json was edited, d.py failed"
        );
    }
}

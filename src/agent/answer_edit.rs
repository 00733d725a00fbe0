//! The answer's code into the files the request names (the answer_edits assist). Asked to "fix
//! the typo in app.py", Qwen2.5-Coder 0.5B answers with the whole corrected file in a fenced
//! block and calls no tool; asked to make area_circle use math.pi, it answers with the new
//! function. The code is right and the file is as it was. When a request asks to change files
//! it names and the answer leaves them all as they were, each such file gets the latest block
//! of the turn's answer that fits it (the way aider's whole-file format has weak models write
//! their edits): a new file the block in its language; an existing file a block that is the
//! whole file again, or, for Python, a block of definitions merged by name (see
//! [`super::code_merge`]). Standard modules the result uses without importing them are
//! imported; a result that does not parse is not written. Each write is a `write_file` call
//! through the same permission policy as the model's own.

use std::path::Path;

use hearth_conversation::{HistoryEntry, ToolCallId, ToolCallRecord};
use serde_json::json;

use super::answer_code::{fenced_blocks, language_of, turn_answer};
use super::code_merge::{
    add_imports, changes_something, is_whole_file, keeps_the_rest, merge_python, redefines,
};
use super::file_request::FileAsk;
use super::turn_context::TurnContext;
use super::unchanged::ChangeCheck;
use super::write_check::{Syntax, unimported_modules};
use crate::tools::WRITE_FILE;

/// Fence labels that name a file type, beside the extension itself (`rs` for `rs`).
const LABELS: [(&str, &str); 22] = [
    ("py", "python"),
    ("py", "python3"),
    ("rs", "rust"),
    ("md", "markdown"),
    ("txt", "text"),
    ("txt", "plaintext"),
    ("sh", "bash"),
    ("sh", "shell"),
    ("bash", "sh"),
    ("bash", "shell"),
    ("yml", "yaml"),
    ("yaml", "yml"),
    ("js", "javascript"),
    ("mjs", "javascript"),
    ("cjs", "javascript"),
    ("ts", "typescript"),
    ("cpp", "c++"),
    ("cc", "cpp"),
    ("hpp", "cpp"),
    ("go", "golang"),
    ("rb", "ruby"),
    ("gitignore", "text"),
];

/// How a block's fence fits a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fit {
    /// The fence names the file's type.
    Labelled,
    /// The fence names no language.
    Unlabelled,
}

fn fit(label: &str, path: &str) -> Option<Fit> {
    let label = label.to_ascii_lowercase();
    if label.is_empty() {
        return Some(Fit::Unlabelled);
    }
    let file = path.rsplit('/').next().unwrap_or(path);
    let ext = file.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())?;
    let syntax = Syntax::of(Path::new(path));
    let named = label == ext
        || LABELS.contains(&(ext.as_str(), label.as_str()))
        || (syntax.is_some() && language_of(&label) == syntax);
    named.then_some(Fit::Labelled)
}

/// The `write_file` calls that put the answer's code into the files `check` names, where the
/// turn left them as they were. `turn` is the turn's entries, its prompt first.
pub async fn edits_from_answer(
    ctx: &TurnContext<'_>,
    check: &ChangeCheck,
    turn: &[HistoryEntry],
) -> Vec<ToolCallRecord> {
    let mut blocks = fenced_blocks(&turn_answer(turn));
    // The latest block first: after a nudge, the model's last word.
    blocks.reverse();
    let mut used = vec![false; blocks.len()];
    let mut calls = Vec::new();
    let targets: Vec<(&str, &Path, Option<&str>)> = check.targets().collect();
    for &(name, _, held) in &targets {
        let alone = targets
            .iter()
            .filter(|(other, _, h)| h.is_some() && same_type(other, name))
            .count()
            == 1;
        for (index, (label, code)) in blocks.iter().enumerate() {
            let Some(fit) = fit(label, name).filter(|_| !used[index]) else {
                continue;
            };
            let content = match held {
                None => new_file(ctx, name, fit, code).await,
                Some(old) => changed_file(ctx, name, old, code, alone).await,
            };
            if ctx.cancel.is_cancelled() {
                return Vec::new();
            }
            if let Some(content) = content {
                used[index] = true;
                calls.push(ToolCallRecord {
                    id: ToolCallId::generate(),
                    name: WRITE_FILE.to_string(),
                    arguments: json!({ "path": name, "content": content }),
                });
                break;
            }
        }
    }
    calls
}

/// The `write_file` call that puts the file asked for whole (see [`super::file_request`]) into
/// place from `answer`: its last block that makes a good file. The fence's label is not held
/// against it (asked for Cargo.toml, the 0.5B labels its TOML `rust`); the content must parse
/// as the file's type where that can be checked. For an existing file the block is the whole
/// file again ([`is_whole_file`]), or Python definitions to merge (asked for mathutils.py with
/// multiply added, the 0.5B writes multiply alone), or a small rewrite that keeps the rest
/// ([`keeps_the_rest`]); a new file takes the block as it is.
pub async fn asked_file_write(
    ctx: &TurnContext<'_>,
    ask: &FileAsk,
    answer: &str,
) -> Option<ToolCallRecord> {
    let name = ask.name.as_str();
    let syntax = Syntax::of(Path::new(name));
    for (_, code) in fenced_blocks(answer).into_iter().rev() {
        let content = match &ask.held {
            None => Some(code),
            Some(old) if is_whole_file(old, &code) => Some(code),
            Some(old) => match syntax {
                Some(Syntax::Python) => merge_python(old, &code),
                _ => None,
            }
            .or_else(|| keeps_the_rest(old, &code).then(|| code.clone())),
        };
        let changed = |c: &String| {
            ask.held
                .as_ref()
                .is_none_or(|old| changes_something(old, c))
        };
        let Some(content) = content.filter(changed) else {
            continue;
        };
        let content = finished(ctx, syntax, content).await;
        if ctx.cancel.is_cancelled() {
            return None;
        }
        if let Some(content) = content {
            return Some(ToolCallRecord {
                id: ToolCallId::generate(),
                name: WRITE_FILE.to_string(),
                arguments: json!({ "path": name, "content": content }),
            });
        }
    }
    None
}

fn same_type(a: &str, b: &str) -> bool {
    let ext = |p: &str| p.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    ext(a) == ext(b)
}

/// A file still to be made: the block, when its fence names the file's type or the file's
/// parser takes it.
async fn new_file(ctx: &TurnContext<'_>, name: &str, fit: Fit, code: &str) -> Option<String> {
    let syntax = Syntax::of(Path::new(name));
    if fit == Fit::Unlabelled && syntax.is_none() {
        return None;
    }
    finished(ctx, syntax, code.to_string()).await
}

/// An existing file: the block as the whole file, or merged into it as Python definitions (an
/// addition only where no other named Python file could be meant).
async fn changed_file(
    ctx: &TurnContext<'_>,
    name: &str,
    old: &str,
    code: &str,
    alone: bool,
) -> Option<String> {
    let syntax = Syntax::of(Path::new(name));
    let mut content = if is_whole_file(old, code) {
        code.to_string()
    } else if syntax == Some(Syntax::Python) && (alone || redefines(old, code)) {
        merge_python(old, code)?
    } else {
        return None;
    };
    if !old.ends_with('\n') && content.ends_with('\n') && !old.is_empty() {
        content.pop();
    }
    if !changes_something(old, &content) {
        return None;
    }
    finished(ctx, syntax, content).await
}

/// `content` with the standard modules it uses imported (Python), where it parses as its type.
async fn finished(
    ctx: &TurnContext<'_>,
    syntax: Option<Syntax>,
    content: String,
) -> Option<String> {
    let Some(syntax) = syntax else {
        return Some(content);
    };
    let mut content = content;
    if syntax == Syntax::Python {
        let modules = unimported_modules(ctx, &content).await;
        if !modules.is_empty() {
            let imports: Vec<String> = modules.iter().map(|m| format!("import {m}")).collect();
            let imports: Vec<&str> = imports.iter().map(String::as_str).collect();
            content = add_imports(&content, &imports);
        }
    }
    syntax
        .complaint_in(ctx, &content)
        .await
        .is_none()
        .then_some(content)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fence_fits_a_file_by_its_label() {
        assert_eq!(fit("python", "app.py"), Some(Fit::Labelled));
        assert_eq!(fit("Py", "src/app.py"), Some(Fit::Labelled));
        assert_eq!(fit("rust", "src/main.rs"), Some(Fit::Labelled));
        assert_eq!(fit("toml", "Cargo.toml"), Some(Fit::Labelled));
        assert_eq!(fit("markdown", "TODO.md"), Some(Fit::Labelled));
        assert_eq!(fit("bash", "run.sh"), Some(Fit::Labelled));
        assert_eq!(fit("", "app.py"), Some(Fit::Unlabelled));
        assert_eq!(fit("json", "app.py"), None);
        assert_eq!(fit("python", "Makefile"), None);
        assert_eq!(fit("fenced-block", "Cargo.toml"), None);
    }
}

//! `edit_file`: exact-string replacements in one file. Each edit's `old_text` must match
//! exactly once (or `replace_all` is set); the edits apply in order, and either all apply or
//! none does. The card shows the diff, and the permission prompt shows it before it happens.

use async_trait::async_trait;
use hearth_backend::ToolSpec;
use hearth_conversation::{Access, ToolContent, ToolKind, ToolLocation};
use serde::Deserialize;
use serde_json::json;

use super::args::{self, plural, shown_target};
use super::file_checks;
use super::handler::{Prepared, ToolContext, ToolError, ToolHandler, ToolOutput};
use crate::host::ClientOpsError;

pub const NAME: &str = "edit_file";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    edits: Vec<Edit>,
}

/// One replacement.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Edit {
    pub old_text: String,
    pub new_text: String,
    #[serde(default)]
    pub replace_all: bool,
}

pub struct EditFile;

#[async_trait]
impl ToolHandler for EditFile {
    fn name(&self) -> &str {
        NAME
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: include_str!("../../prompts/tools/edit_file.md").into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File to edit: absolute, relative to the working directory, or starting with ~"},
                    "edits": {
                        "type": "array",
                        "minItems": 1,
                        "description": "Replacements, applied in order; all or none apply",
                        "items": {
                            "type": "object",
                            "properties": {
                                "old_text": {"type": "string", "description": "Exact text to replace, including whitespace; must match exactly once"},
                                "new_text": {"type": "string", "description": "Replacement text"},
                                "replace_all": {"type": "boolean", "description": "Replace every match instead of requiring exactly one; default false"}
                            },
                            "required": ["old_text", "new_text"],
                            "additionalProperties": false
                        }
                    }
                },
                "required": ["path", "edits"],
                "additionalProperties": false
            }),
        }
    }

    fn access(&self) -> Access {
        Access::Write
    }

    async fn prepare(
        &self,
        args: &serde_json::Value,
        ctx: &ToolContext<'_>,
    ) -> Result<Prepared, ToolError> {
        let args: Args = args::parse(NAME, args)?;
        let target = ctx.resolve(&args.path)?;
        let old = read(target.path(), ctx).await?;
        let applied = apply_edits(&old, &args.edits, &target.path().display().to_string())?;
        Ok(Prepared {
            title: format!("Edit {}", shown_target(ctx.cwd, &target)),
            kind: ToolKind::Edit,
            locations: vec![ToolLocation {
                path: target.path().to_path_buf(),
                line: first_changed_line(&old, &applied.text),
            }],
            access: Access::Write,
            preview: vec![ToolContent::Diff {
                path: target.path().to_path_buf(),
                old_text: Some(old),
                new_text: applied.text,
            }],
            paths: vec![target],
            command: None,
        })
    }

    async fn run(
        &self,
        args: &serde_json::Value,
        prepared: &Prepared,
        ctx: &ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let args: Args = args::parse(NAME, args)?;
        let path = args::target(prepared)?.path();
        // Applied again to the current text: the file may have changed since the preview.
        let old = read(path, ctx).await?;
        let applied = apply_edits(&old, &args.edits, &path.display().to_string())?;
        ctx.client
            .write_text_file(path, &applied.text)
            .await
            .map_err(ToolError::from_client)?;
        let for_model = format!(
            "Edited {}: {} from {}.",
            path.display(),
            plural(applied.replacements, "replacement", "replacements"),
            plural(args.edits.len(), "edit", "edits")
        );
        Ok(ToolOutput {
            for_model,
            raw_output: json!({"path": path, "replacements": applied.replacements}),
            content: vec![ToolContent::Diff {
                path: path.to_path_buf(),
                old_text: Some(old),
                new_text: applied.text,
            }],
            failed: false,
        })
    }
}

async fn read(path: &std::path::Path, ctx: &ToolContext<'_>) -> Result<String, ToolError> {
    file_checks::editable(path, NAME).await?;
    ctx.client
        .read_text_file(path, None, None)
        .await
        .map_err(|e| match e {
            ClientOpsError::NotFound(p) => ToolError::Model(format!(
                "file not found: {}; use write_file to create a file",
                p.display()
            )),
            other => ToolError::from_client(other),
        })
}

/// The result of applying every edit.
#[derive(Debug, PartialEq, Eq)]
pub struct Applied {
    pub text: String,
    pub replacements: usize,
}

/// Applies `edits` in order to `text`; the first edit that does not match exactly once (and
/// is not `replace_all`) fails the whole call. When the file uses CRLF line ends and an edit
/// uses plain LF, the edit is matched with CRLF.
pub fn apply_edits(text: &str, edits: &[Edit], shown_path: &str) -> Result<Applied, ToolError> {
    if edits.is_empty() {
        return Err(ToolError::Model(format!(
            "{NAME}: `edits` is empty; give at least one {{old_text, new_text}}"
        )));
    }
    let crlf = text.contains("\r\n");
    let mut out = text.to_owned();
    let mut replacements = 0;
    for (i, edit) in edits.iter().enumerate() {
        let label = if edits.len() == 1 {
            "the edit".to_owned()
        } else {
            format!("edit {} of {}", i + 1, edits.len())
        };
        let fail = |why: String| {
            Err(ToolError::Model(format!(
                "{label}: {why}; nothing was changed"
            )))
        };
        if edit.old_text.is_empty() {
            return fail("old_text is empty (use write_file to write a whole file)".into());
        }
        let (old, new) = if crlf && !edit.old_text.contains('\r') {
            (
                edit.old_text.replace('\n', "\r\n"),
                edit.new_text.replace('\n', "\r\n"),
            )
        } else {
            (edit.old_text.clone(), edit.new_text.clone())
        };
        if old == new {
            return fail("old_text and new_text are the same".into());
        }
        match out.matches(old.as_str()).count() {
            0 => return fail(not_found(&out, &old, shown_path, i > 0)),
            n if n > 1 && !edit.replace_all => {
                return fail(format!(
                    "old_text matches {n} times in {shown_path}; include more surrounding lines \
                     so that it matches exactly once, or set replace_all to true"
                ));
            }
            n => {
                out = out.replace(old.as_str(), &new);
                replacements += n;
            }
        }
    }
    Ok(Applied {
        text: out,
        replacements,
    })
}

/// Why an old_text was not found, with a hint where one is likely.
fn not_found(text: &str, old: &str, shown_path: &str, after_others: bool) -> String {
    let mut why = format!("old_text was not found in {shown_path}");
    let numbered = old.lines().filter(|l| !l.trim().is_empty()).all(|l| {
        l.trim_start()
            .split_once('\t')
            .is_some_and(|(n, _)| n.parse::<u32>().is_ok())
    });
    if numbered {
        why.push_str(" (it seems to include read_file's line numbers; leave them out)");
    } else if squash(text).contains(&squash(old)) {
        why.push_str(" (it is there with different indentation or spacing; copy the text exactly)");
    }
    if after_others {
        why.push_str(" (edits apply in order: this one sees the text after the earlier ones)");
    }
    why
}

/// Each line trimmed, blank lines dropped: for the "different whitespace" hint.
fn squash(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The 1-based line of the first difference, so the editor can follow the edit.
fn first_changed_line(old: &str, new: &str) -> Option<u32> {
    let at = old
        .bytes()
        .zip(new.bytes())
        .position(|(a, b)| a != b)
        .unwrap_or(old.len().min(new.len()));
    let newlines = old.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count();
    u32::try_from(newlines + 1).ok()
}

#[cfg(test)]
#[path = "edit_file_tests.rs"]
mod tests;

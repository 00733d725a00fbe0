//! `read_file`: a text file's lines, numbered, through the client (so the editor's unsaved
//! buffer is what the model sees). Binary files are refused; long reads are capped with a note
//! saying how to read on.

use async_trait::async_trait;
use hearth_backend::ToolSpec;
use hearth_conversation::{Access, ToolContent, ToolKind, ToolLocation};
use serde::Deserialize;
use serde_json::json;
use std::io::Read;

use crate::host::file_io;

use super::args::{self, cut_line, shown_target};
use super::file_checks;
use super::handler::{Prepared, ToolContext, ToolError, ToolHandler, ToolOutput};

pub const NAME: &str = "read_file";

/// Files larger than this are read from the client a slice at a time, not whole.
const WHOLE_FILE_MAX: u64 = 8 * 1024 * 1024;
/// How much of a file is checked for NUL bytes to call it binary.
const SNIFF_BYTES: usize = 8 * 1024;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    /// First line to read, 1-based.
    #[serde(default, alias = "line")]
    offset: Option<u32>,
    #[serde(default)]
    limit: Option<u32>,
}

pub struct ReadFile;

#[async_trait]
impl ToolHandler for ReadFile {
    fn name(&self) -> &str {
        NAME
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: include_str!("../../prompts/tools/read_file.md").into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File to read: absolute, relative to the working directory, or starting with ~"},
                    "offset": {"type": "integer", "minimum": 1, "description": "First line to read (1-based); default 1"},
                    "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to read; default 2000"}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        }
    }

    fn access(&self) -> Access {
        Access::Read
    }

    async fn prepare(
        &self,
        args: &serde_json::Value,
        ctx: &ToolContext<'_>,
    ) -> Result<Prepared, ToolError> {
        let args: Args = args::parse(NAME, args)?;
        let target = ctx.resolve(&args.path)?;
        Ok(Prepared {
            title: format!("Read {}", shown_target(ctx.cwd, &target)),
            kind: ToolKind::Read,
            locations: vec![ToolLocation {
                path: target.path().to_path_buf(),
                line: args.offset,
            }],
            access: Access::Read,
            paths: vec![target],
            command: None,
            preview: Vec::new(),
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
        let size = sniff(path).await?;
        let start = usize::try_from(args.offset.unwrap_or(1).max(1)).unwrap_or(usize::MAX);
        let limit = args
            .limit
            .and_then(|l| usize::try_from(l).ok())
            .unwrap_or(ctx.limits.read_lines)
            .max(1);
        // A huge file is read only in the slice asked for; its total line count stays unknown.
        let (text, first_line, total) = if size.is_some_and(|s| s > WHOLE_FILE_MAX) {
            let line = u32::try_from(start).ok();
            let lim = u32::try_from(limit).ok();
            let text = ctx
                .client
                .read_text_file(path, line, lim)
                .await
                .map_err(ToolError::from_client)?;
            (text, start, None)
        } else {
            let text = ctx
                .client
                .read_text_file(path, None, None)
                .await
                .map_err(ToolError::from_client)?;
            let total = text.lines().count();
            (text, 1, Some(total))
        };
        if text.contains('\0') {
            return Err(binary_error(path));
        }
        let page = number_lines(&text, start - first_line, start, limit, ctx);
        let header = header(path, start, total, page.count)?;
        let cut_note = if page.cut_at_bytes {
            format!(
                "\n[output capped at {} bytes; read on with a later offset]",
                ctx.limits.read_bytes
            )
        } else {
            String::new()
        };
        Ok(ToolOutput {
            for_model: format!("{header}\n{}{cut_note}", page.text),
            content: vec![ToolContent::Text {
                text: header.clone(),
            }],
            raw_output: json!({
                "path": path,
                "start_line": start,
                "lines": page.count,
                "total_lines": total,
                "capped": page.cut_at_bytes,
            }),
            failed: false,
        })
    }
}

/// The result's first line: the absolute path, the lines shown, the total, how to read on.
fn header(
    path: &std::path::Path,
    start: usize,
    total: Option<usize>,
    count: usize,
) -> Result<String, ToolError> {
    let shown = path.display();
    Ok(match (total, count) {
        (Some(0), _) => format!("{shown}: empty file"),
        (Some(total), 0) => {
            return Err(ToolError::Model(format!(
                "{shown}: offset {start} is past the end of the file ({total} lines)"
            )));
        }
        (Some(total), n) => {
            let end = start + n - 1;
            let more = if end < total {
                format!("; to read on, call read_file with offset={}", end + 1)
            } else {
                String::new()
            };
            format!("{shown}: lines {start}-{end} of {total}{more}")
        }
        (None, n) => format!(
            "{shown}: lines {start}-{} (a large file; read on with offset={})",
            start + n.saturating_sub(1),
            start + n
        ),
    })
}

/// Checks the file on disk before asking the client: a directory, a special file (a FIFO
/// would block the read forever, a device never ends) or a binary file gets a clear error.
/// Returns the size when the file exists locally.
async fn sniff(path: &std::path::Path) -> Result<Option<u64>, ToolError> {
    let Some(size) = file_checks::readable(path, NAME).await? else {
        return Ok(None);
    };
    let owned = path.to_path_buf();
    // A failed sniff is not fatal: the client's read reports the real error.
    let head = tokio::task::spawn_blocking(move || {
        let file = file_io::open_regular(&owned).ok()?;
        let mut head = Vec::with_capacity(SNIFF_BYTES);
        file.take(SNIFF_BYTES as u64).read_to_end(&mut head).ok()?;
        Some(head)
    })
    .await
    .ok()
    .flatten();
    if head.is_some_and(|head| head.contains(&0)) {
        return Err(binary_error(path));
    }
    Ok(Some(size))
}

fn binary_error(path: &std::path::Path) -> ToolError {
    ToolError::Model(format!(
        "{} is a binary file; read_file reads text files only",
        path.display()
    ))
}

struct Page {
    text: String,
    count: usize,
    cut_at_bytes: bool,
}

/// Numbers the lines of `text` after the first `skip`, calling the first one `first`; at most
/// `limit` lines and `read_bytes` bytes.
fn number_lines(
    text: &str,
    skip: usize,
    first: usize,
    limit: usize,
    ctx: &ToolContext<'_>,
) -> Page {
    let mut page = Page {
        text: String::new(),
        count: 0,
        cut_at_bytes: false,
    };
    for (i, line) in text.lines().skip(skip).take(limit).enumerate() {
        let line = cut_line(
            line.strip_suffix('\r').unwrap_or(line),
            ctx.limits.line_chars,
        );
        let numbered = format!("{:>6}\t{line}\n", first + i);
        if page.count > 0 && page.text.len() + numbered.len() > ctx.limits.read_bytes {
            page.cut_at_bytes = true;
            break;
        }
        page.text.push_str(&numbered);
        page.count += 1;
    }
    page
}

#[cfg(test)]
#[path = "read_file_tests.rs"]
mod tests;

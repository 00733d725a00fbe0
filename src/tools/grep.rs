//! `grep`: a regex search over files, respecting `.gitignore`, skipping binary files, with
//! the number of matches and the output capped. The walk runs in parallel on blocking threads.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use hearth_backend::ToolSpec;
use hearth_conversation::{Access, ToolContent, ToolKind, ToolLocation};
use ignore::WalkState;
use regex::bytes::{Regex, RegexBuilder};
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::host::file_io;

use super::args::{self, cap_head, cut_line, short_path};
use super::handler::{Prepared, ToolContext, ToolError, ToolHandler, ToolOutput};
use super::walk::{PathGlob, check_root, walker};

pub const NAME: &str = "grep";

/// Files larger than this are not searched (generated data, logs).
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// A NUL byte in this many leading bytes marks a file binary.
const BINARY_SNIFF: usize = 8 * 1024;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    glob: Option<String>,
    #[serde(default)]
    ignore_case: bool,
}

pub struct Grep;

#[async_trait]
impl ToolHandler for Grep {
    fn name(&self) -> &str {
        NAME
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: include_str!("../../prompts/tools/grep.md").into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Regular expression (Rust regex syntax), matched per line"},
                    "path": {"type": "string", "description": "File or directory to search; default: the working directory"},
                    "glob": {"type": "string", "description": "Only search files matching this glob, e.g. `*.rs`"},
                    "ignore_case": {"type": "boolean", "description": "Case-insensitive match; default false"}
                },
                "required": ["pattern"],
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
        compile(&args)?;
        let root = ctx.resolve(args.path.as_deref().unwrap_or("."))?;
        Ok(Prepared {
            title: format!(
                "Grep `{}` in {}",
                args.pattern,
                short_path(ctx.cwd, root.path())
            ),
            kind: ToolKind::Search,
            locations: vec![ToolLocation {
                path: root.path().to_path_buf(),
                line: None,
            }],
            access: Access::Read,
            paths: vec![root],
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
        let root = args::target(prepared)?.path().to_path_buf();
        check_root(&root).await?;
        let search = Search {
            regex: compile(&args)?,
            glob: args.glob.as_deref().map(PathGlob::new).transpose()?,
            max_matches: ctx.limits.max_results,
            line_chars: ctx.limits.line_chars,
        };
        let (cancel, walk_root) = (ctx.cancel.clone(), root.clone());
        let found = tokio::task::spawn_blocking(move || search.run(&walk_root, &cancel))
            .await
            .map_err(|e| ToolError::Model(format!("grep failed: {e}")))?;
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        Ok(render(&args.pattern, &root, &found, ctx))
    }
}

fn compile(args: &Args) -> Result<Regex, ToolError> {
    RegexBuilder::new(&args.pattern)
        .case_insensitive(args.ignore_case)
        .multi_line(true)
        .crlf(true)
        .build()
        .map_err(|e| ToolError::Model(format!("invalid regex `{}`: {e}", args.pattern)))
}

fn render(pattern: &str, root: &Path, found: &Found, ctx: &ToolContext<'_>) -> ToolOutput {
    let matches: usize = found.files.iter().map(|f| f.hits.len()).sum();
    let mut text = if matches == 0 {
        format!("No matches for `{pattern}` in {}.\n", root.display())
    } else {
        format!(
            "{} in {} for `{pattern}` in {}:\n",
            args::plural(matches, "match", "matches"),
            args::plural(found.files.len(), "file", "files"),
            root.display()
        )
    };
    for file in &found.files {
        let shown = short_path(ctx.cwd, &file.path);
        for (line, content) in &file.hits {
            text.push_str(&format!("{shown}:{line}:{content}\n"));
        }
    }
    let cut = cap_head(&mut text, ctx.limits.output_bytes);
    if found.stopped_early || cut {
        text.push_str(&format!(
            "[results capped (at most {} matches, {} bytes); narrow the pattern, path or glob]\n",
            ctx.limits.max_results, ctx.limits.output_bytes
        ));
    }
    ToolOutput {
        content: vec![ToolContent::Text {
            text: format!(
                "{} in {}",
                args::plural(matches, "match", "matches"),
                args::plural(found.files.len(), "file", "files")
            ),
        }],
        raw_output: json!({
            "root": root,
            "matches": matches,
            "files": found.files.len(),
            "capped": found.stopped_early || cut,
        }),
        for_model: text,
        failed: false,
    }
}

/// One search, shared by the walker threads.
struct Search {
    regex: Regex,
    glob: Option<PathGlob>,
    max_matches: usize,
    line_chars: usize,
}

struct FileHits {
    path: PathBuf,
    hits: Vec<(usize, String)>,
}

struct Found {
    /// Sorted by path.
    files: Vec<FileHits>,
    /// The match cap was reached, so more matches may exist.
    stopped_early: bool,
}

impl Search {
    fn run(&self, root: &Path, cancel: &CancellationToken) -> Found {
        let files = Mutex::new(Vec::new());
        let count = AtomicUsize::new(0);
        walker(root).build_parallel().run(|| {
            Box::new(|entry| {
                if cancel.is_cancelled() || count.load(Ordering::Relaxed) >= self.max_matches {
                    return WalkState::Quit;
                }
                let Ok(entry) = entry else {
                    return WalkState::Continue;
                };
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    return WalkState::Continue;
                }
                if self
                    .glob
                    .as_ref()
                    .is_some_and(|g| !g.is_match(root, entry.path()))
                {
                    return WalkState::Continue;
                }
                if let Some(hits) = self.search_file(entry.path()) {
                    count.fetch_add(hits.len(), Ordering::Relaxed);
                    let path = entry.into_path();
                    files
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(FileHits { path, hits });
                }
                WalkState::Continue
            })
        });
        let mut files = files.into_inner().unwrap_or_else(|e| e.into_inner());
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Found {
            files,
            stopped_early: count.load(Ordering::Relaxed) >= self.max_matches,
        }
    }

    /// The matching lines of one file, or `None` (no match, binary, too large, unreadable).
    fn search_file(&self, path: &Path) -> Option<Vec<(usize, String)>> {
        // Opened without blocking and checked as a regular file: a FIFO swapped in after the
        // walk saw a file must not stall the search.
        let file = file_io::open_regular(path).ok()?;
        if file.metadata().ok()?.len() > MAX_FILE_BYTES {
            return None;
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(file, MAX_FILE_BYTES), &mut bytes)
            .ok()?;
        if bytes[..bytes.len().min(BINARY_SNIFF)].contains(&0) || !self.regex.is_match(&bytes) {
            return None;
        }
        let hits: Vec<(usize, String)> = bytes
            .split(|&b| b == b'\n')
            .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
            .enumerate()
            .filter(|(_, line)| self.regex.is_match(line))
            .take(self.max_matches)
            .map(|(i, line)| {
                (
                    i + 1,
                    cut_line(&String::from_utf8_lossy(line), self.line_chars),
                )
            })
            .collect();
        (!hits.is_empty()).then_some(hits)
    }
}

#[cfg(test)]
#[path = "grep_tests.rs"]
mod tests;

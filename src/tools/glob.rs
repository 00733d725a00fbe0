//! `glob`: files whose path matches a glob pattern, respecting `.gitignore`.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use hearth_backend::ToolSpec;
use hearth_conversation::{Access, ToolContent, ToolKind, ToolLocation};
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::args::{self, cap_head, short_path};
use super::handler::{Prepared, ToolContext, ToolError, ToolHandler, ToolOutput};
use super::walk::{PathGlob, check_root, walker};

pub const NAME: &str = "glob";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
}

pub struct Glob;

#[async_trait]
impl ToolHandler for Glob {
    fn name(&self) -> &str {
        NAME
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: include_str!("../../prompts/tools/glob.md").into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Glob, e.g. `*.rs` (file names at any depth) or `src/**/*.toml` (paths below `path`)"},
                    "path": {"type": "string", "description": "Directory to search; default: the working directory"}
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
        PathGlob::new(&args.pattern)?;
        let root = ctx.resolve(args.path.as_deref().unwrap_or("."))?;
        Ok(Prepared {
            title: format!(
                "Glob `{}` in {}",
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
        let glob = PathGlob::new(&args.pattern)?;
        let (cancel, max, walk_root) = (ctx.cancel.clone(), ctx.limits.max_results, root.clone());
        let found = tokio::task::spawn_blocking(move || find(&walk_root, &glob, max, &cancel))
            .await
            .map_err(|e| ToolError::Model(format!("glob failed: {e}")))?;
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let mut text = if found.total == 0 {
            format!("No files match `{}` in {}.\n", args.pattern, root.display())
        } else {
            format!(
                "{} match `{}` in {}:\n",
                args::plural(found.total, "file", "files"),
                args.pattern,
                root.display()
            )
        };
        for path in &found.paths {
            text.push_str(&short_path(ctx.cwd, path));
            text.push('\n');
        }
        let cut = cap_head(&mut text, ctx.limits.output_bytes);
        if found.paths.len() < found.total || cut {
            text.push_str("[list capped; narrow the pattern or the path]\n");
        }
        Ok(ToolOutput {
            content: vec![ToolContent::Text {
                text: args::plural(found.total, "file", "files"),
            }],
            raw_output: json!({"root": root, "matches": found.total, "shown": found.paths.len()}),
            for_model: text,
            failed: false,
        })
    }
}

struct Found {
    paths: Vec<PathBuf>,
    total: usize,
}

/// Walks `root` in file-name order and keeps the first `max` matching files.
fn find(root: &Path, glob: &PathGlob, max: usize, cancel: &CancellationToken) -> Found {
    let mut found = Found {
        paths: Vec::new(),
        total: 0,
    };
    let walk = walker(root).sort_by_file_name(|a, b| a.cmp(b)).build();
    for entry in walk {
        if cancel.is_cancelled() {
            break;
        }
        let Ok(entry) = entry else { continue };
        let is_file = entry
            .file_type()
            .is_some_and(|t| t.is_file() || t.is_symlink());
        if is_file && glob.is_match(root, entry.path()) {
            found.total += 1;
            if found.paths.len() < max {
                found.paths.push(entry.into_path());
            }
        }
    }
    found
}

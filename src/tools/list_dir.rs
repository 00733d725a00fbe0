//! `list_dir`: the entries of one directory, sorted, directories marked with `/`.

use async_trait::async_trait;
use hearth_backend::ToolSpec;
use hearth_conversation::{Access, ToolContent, ToolKind, ToolLocation};
use serde::Deserialize;
use serde_json::json;

use super::args::{self, short_path};
use super::handler::{Prepared, ToolContext, ToolError, ToolHandler, ToolOutput};

pub const NAME: &str = "list_dir";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    #[serde(default)]
    path: Option<String>,
}

pub struct ListDir;

#[async_trait]
impl ToolHandler for ListDir {
    fn name(&self) -> &str {
        NAME
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: include_str!("../../prompts/tools/list_dir.md").into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Directory to list; default: the working directory"}
                },
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
        let target = ctx.resolve(args.path.as_deref().unwrap_or("."))?;
        Ok(Prepared {
            title: format!("List {}", short_path(ctx.cwd, target.path())),
            kind: ToolKind::Read,
            locations: vec![ToolLocation {
                path: target.path().to_path_buf(),
                line: None,
            }],
            access: Access::Read,
            paths: vec![target],
            command: None,
            preview: Vec::new(),
        })
    }

    async fn run(
        &self,
        _args: &serde_json::Value,
        prepared: &Prepared,
        ctx: &ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let dir = args::target(prepared)?.path();
        let mut reader = tokio::fs::read_dir(dir).await.map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                ToolError::Model(format!("directory not found: {}", dir.display()))
            }
            std::io::ErrorKind::NotADirectory => ToolError::Model(format!(
                "{} is a file, not a directory; use read_file",
                dir.display()
            )),
            _ => ToolError::Model(format!("cannot list {}: {e}", dir.display())),
        })?;
        let mut entries = Vec::new();
        while let Some(entry) = reader
            .next_entry()
            .await
            .map_err(|e| ToolError::Model(format!("cannot list {}: {e}", dir.display())))?
        {
            let name = entry.file_name().to_string_lossy().into_owned();
            let file_type = entry.file_type().await.ok();
            let shown = match file_type {
                Some(t) if t.is_dir() => format!("{name}/"),
                Some(t) if t.is_symlink() => match tokio::fs::read_link(entry.path()).await {
                    Ok(target) => format!("{name} -> {}", target.display()),
                    Err(_) => name,
                },
                _ => name,
            };
            entries.push(shown);
        }
        entries.sort();
        let total = entries.len();
        let shown_count = total.min(ctx.limits.max_results);
        let count = if total == 1 {
            "1 entry".to_owned()
        } else {
            format!("{total} entries")
        };
        let mut text = format!("{}: {count}\n", dir.display());
        for entry in &entries[..shown_count] {
            text.push_str(entry);
            text.push('\n');
        }
        if shown_count < total {
            text.push_str(&format!(
                "[{} more not shown; list a subdirectory or use glob]\n",
                total - shown_count
            ));
        }
        Ok(ToolOutput {
            content: vec![ToolContent::Text { text: count }],
            raw_output: json!({"path": dir, "entries": total, "shown": shown_count}),
            for_model: text,
            failed: false,
        })
    }
}

//! `write_file`: creates or overwrites a whole text file through the client (so the editor
//! records the change for review). Parent directories are created. The card shows the diff.

use std::path::Path;

use async_trait::async_trait;
use hearth_backend::ToolSpec;
use hearth_conversation::{Access, ToolContent, ToolKind, ToolLocation};
use serde::Deserialize;
use serde_json::json;

use super::args::{self, plural, shown_target};
use super::file_checks;
use super::handler::{Prepared, ToolContext, ToolError, ToolHandler, ToolOutput};
use crate::host::ClientOpsError;

pub const NAME: &str = "write_file";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    content: String,
}

pub struct WriteFile;

#[async_trait]
impl ToolHandler for WriteFile {
    fn name(&self) -> &str {
        NAME
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: include_str!("../../prompts/tools/write_file.md").into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File to write: absolute, relative to the working directory, or starting with ~"},
                    "content": {"type": "string", "description": "The complete new content of the file"}
                },
                "required": ["path", "content"],
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
        let old = read_existing(target.path(), ctx).await?;
        Ok(Prepared {
            title: format!("Write {}", shown_target(ctx.cwd, &target)),
            kind: ToolKind::Edit,
            locations: vec![ToolLocation {
                path: target.path().to_path_buf(),
                line: None,
            }],
            access: Access::Write,
            preview: vec![ToolContent::Diff {
                path: target.path().to_path_buf(),
                old_text: old,
                new_text: args.content,
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
        let old = read_existing(path, ctx).await?;
        create_parents(path).await?;
        ctx.client
            .write_text_file(path, &args.content)
            .await
            .map_err(ToolError::from_client)?;
        let lines = plural(args.content.lines().count(), "line", "lines");
        let for_model = match &old {
            None => format!("Created {} ({lines}).", path.display()),
            Some(old) => format!(
                "Wrote {} ({lines}; it had {}).",
                path.display(),
                plural(old.lines().count(), "line", "lines")
            ),
        };
        Ok(ToolOutput {
            for_model,
            raw_output: json!({"path": path, "created": old.is_none(), "bytes": args.content.len()}),
            content: vec![ToolContent::Diff {
                path: path.to_path_buf(),
                old_text: old,
                new_text: args.content,
            }],
            failed: false,
        })
    }
}

/// The current text of a file that may not exist yet (`None` then).
async fn read_existing(path: &Path, ctx: &ToolContext<'_>) -> Result<Option<String>, ToolError> {
    if !file_checks::editable(path, NAME).await? {
        return Ok(None);
    }
    match ctx.client.read_text_file(path, None, None).await {
        Ok(text) => Ok(Some(text)),
        Err(ClientOpsError::NotFound(_)) => Ok(None),
        Err(ClientOpsError::Disconnected) => {
            Err(ToolError::from_client(ClientOpsError::Disconnected))
        }
        // Unreadable as text (binary): it is overwritten, and the diff shows it as new.
        Err(e) => {
            tracing::debug!(
                "write_file: old content of {} unreadable: {e}",
                path.display()
            );
            Ok(None)
        }
    }
}

/// Creates the directories a new file needs.
pub(super) async fn create_parents(path: &Path) -> Result<(), ToolError> {
    match path.parent() {
        Some(parent) => tokio::fs::create_dir_all(parent).await.map_err(|e| {
            ToolError::Model(format!("cannot create directory {}: {e}", parent.display()))
        }),
        None => Ok(()),
    }
}

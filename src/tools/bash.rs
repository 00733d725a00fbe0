//! `bash`: runs a command line in a terminal the client provides (Zed's terminal inside the
//! tool card, or a local child process). The terminal is shown on the card as soon as it
//! exists; the command is killed at its timeout or when the turn is cancelled; the terminal is
//! always released. The result states the exit code and whether the output was capped.

use std::time::Duration;

use async_trait::async_trait;
use hearth_backend::ToolSpec;
use hearth_conversation::{
    Access, AgentEvent, TerminalId, ToolCardUpdate, ToolContent, ToolKind, ToolLocation, ToolStatus,
};
use serde::Deserialize;
use serde_json::json;

use super::args::{self, short_path};
use super::handler::{Prepared, ToolContext, ToolError, ToolHandler, ToolOutput};
use super::invocation::CommandShape;
use crate::host::{ClientOpsError, ExitStatus, TerminalOutput, TerminalRequest};
use crate::text_safety::visible_controls;

pub const NAME: &str = "bash";

/// Longest command shown in a card title.
const TITLE_CHARS: usize = 80;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    command: String,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    timeout_secs: Option<u64>,
}

pub struct Bash;

/// How the wait for the command ended.
enum Ended {
    Exited(ExitStatus),
    TimedOut(Duration),
    Cancelled,
    Lost(ClientOpsError),
}

#[async_trait]
impl ToolHandler for Bash {
    fn name(&self) -> &str {
        NAME
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: include_str!("../../prompts/tools/bash.md").into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "Shell command line, run with `sh -c`"},
                    "cwd": {"type": "string", "description": "Directory to run in; default: the working directory"},
                    "timeout_secs": {"type": "integer", "minimum": 1, "description": "Kill the command after this many seconds; default 120"}
                },
                "required": ["command"],
                "additionalProperties": false
            }),
        }
    }

    fn access(&self) -> Access {
        Access::Execute
    }

    async fn prepare(
        &self,
        args: &serde_json::Value,
        ctx: &ToolContext<'_>,
    ) -> Result<Prepared, ToolError> {
        let args: Args = args::parse(NAME, args)?;
        if args.command.trim().is_empty() {
            return Err(ToolError::Model("bash: `command` is empty".into()));
        }
        let cwd = ctx.resolve(args.cwd.as_deref().unwrap_or("."))?;
        if !tokio::fs::metadata(cwd.path())
            .await
            .is_ok_and(|m| m.is_dir())
        {
            return Err(ToolError::Model(format!(
                "bash: cwd {} is not an existing directory",
                cwd.path().display()
            )));
        }
        // The question must show what will run: every line, control characters spelled
        // out (a CR or an escape could otherwise hide part of it on a terminal).
        let shown = visible_controls(args.command.trim_end());
        let first_line = shown.lines().next().unwrap_or_default();
        let mut title = args::cut_line(first_line, TITLE_CHARS);
        let whole_in_title = title.len() == shown.len();
        if !whole_in_title {
            title.push_str(" …");
        }
        let title = if cwd.path() == ctx.cwd {
            format!("`{title}`")
        } else {
            format!("`{title}` in {}", short_path(ctx.cwd, cwd.path()))
        };
        let preview = if whole_in_title {
            Vec::new()
        } else {
            vec![ToolContent::Text {
                text: fenced(&shown),
            }]
        };
        Ok(Prepared {
            title,
            kind: ToolKind::Execute,
            locations: vec![ToolLocation {
                path: cwd.path().to_path_buf(),
                line: None,
            }],
            access: Access::Execute,
            paths: vec![cwd],
            command: Some(CommandShape::of(&args.command)),
            preview,
        })
    }

    async fn run(
        &self,
        args: &serde_json::Value,
        prepared: &Prepared,
        ctx: &ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let args: Args = args::parse(NAME, args)?;
        let cwd = args::target(prepared)?.path().to_path_buf();
        let timeout = ctx.limits.bash_timeout(args.timeout_secs);
        let request = TerminalRequest {
            command: args.command.clone(),
            cwd,
            // Nothing may wait for a pager or a terminal prompt: there is no one to answer.
            env: vec![
                ("PAGER".into(), "cat".into()),
                ("GIT_PAGER".into(), "cat".into()),
                ("GIT_TERMINAL_PROMPT".into(), "0".into()),
            ],
            output_byte_limit: u64::try_from(ctx.limits.output_bytes).unwrap_or(u64::MAX),
        };
        let id = ctx
            .client
            .create_terminal(request)
            .await
            .map_err(ToolError::from_client)?;
        ctx.client.send(AgentEvent::ToolCallUpdated {
            id: ctx.call_id.clone(),
            update: ToolCardUpdate {
                status: Some(ToolStatus::InProgress),
                content: Some(vec![ToolContent::Terminal {
                    terminal_id: id.clone(),
                }]),
                ..ToolCardUpdate::default()
            },
        });
        let ended = supervise(ctx, &id, timeout).await;
        let output = match ended {
            Ended::Cancelled => None,
            _ => ctx.client.terminal_output(&id).await.ok(),
        };
        // Always released, whatever happened above.
        if let Err(e) = ctx.client.release_terminal(&id).await {
            tracing::warn!(%id, "releasing a terminal failed: {e}");
        }
        match ended {
            Ended::Cancelled => Err(ToolError::Cancelled),
            Ended::Lost(e) => Err(ToolError::from_client(e)),
            ended => Ok(report(&id, &ended, output.unwrap_or_default(), ctx)),
        }
    }
}

/// Waits for the command, racing its timeout and the turn's cancellation; kills it unless it
/// exited by itself.
/// `text` in a Markdown code fence longer than any backtick run inside it, so a command cannot
/// close the fence and restyle the rest of the question.
fn fenced(text: &str) -> String {
    let longest_run = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest_run.max(2) + 1);
    format!("{fence}sh\n{text}\n{fence}")
}

async fn supervise(ctx: &ToolContext<'_>, id: &TerminalId, timeout: Duration) -> Ended {
    let ended = tokio::select! {
        biased;
        () = ctx.cancel.cancelled() => Ended::Cancelled,
        exit = ctx.client.wait_for_exit(id) => match exit {
            Ok(status) => Ended::Exited(status),
            Err(e) => Ended::Lost(e),
        },
        () = tokio::time::sleep(timeout) => Ended::TimedOut(timeout),
    };
    if !matches!(ended, Ended::Exited(_))
        && let Err(e) = ctx.client.kill_terminal(id).await
    {
        tracing::warn!(%id, "killing a terminal failed: {e}");
    }
    ended
}

/// The result the model reads: how it ended, whether the output was capped, the output.
fn report(
    id: &TerminalId,
    ended: &Ended,
    output: TerminalOutput,
    ctx: &ToolContext<'_>,
) -> ToolOutput {
    let cap = ctx.limits.output_bytes;
    let (status_line, failed, exit_code, signal) = match ended {
        Ended::Exited(ExitStatus {
            exit_code: Some(code),
            ..
        }) => (format!("exit code: {code}"), *code != 0, Some(*code), None),
        Ended::Exited(ExitStatus { signal, .. }) => {
            let signal = signal.clone().unwrap_or_else(|| "unknown".into());
            (
                format!("terminated by signal {signal}"),
                true,
                None,
                Some(signal),
            )
        }
        Ended::TimedOut(after) => (
            format!(
                "timed out after {} s; the command was killed",
                after.as_secs()
            ),
            true,
            None,
            None,
        ),
        Ended::Cancelled | Ended::Lost(_) => (String::new(), true, None, None),
    };
    let mut text = status_line;
    if output.truncated {
        text.push_str(&format!(
            "\n[output capped: only the last {cap} bytes are shown (cap: {cap} bytes)]"
        ));
    }
    if output.output.is_empty() {
        text.push_str("\n(no output)");
    } else {
        text.push_str("\noutput:\n");
        text.push_str(&output.output);
    }
    ToolOutput {
        for_model: text,
        content: vec![ToolContent::Terminal {
            terminal_id: id.clone(),
        }],
        raw_output: json!({
            "exit_code": exit_code,
            "signal": signal,
            "timed_out": matches!(ended, Ended::TimedOut(_)),
            "truncated": output.truncated,
            "output_cap_bytes": cap,
            "output": output.output,
        }),
        failed,
    }
}

#[cfg(test)]
#[path = "bash_tests.rs"]
mod tests;

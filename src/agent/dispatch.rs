//! Running the tool calls of one round: look up, prepare, ask the policy (and the user), run,
//! and report each step as a tool card. Read-only calls run concurrently; the rest in order.

use crate::sync::lock;
use std::future::Future;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use futures::future::join_all;
use hearth_conversation::{
    AgentEvent, AlwaysRules, HistoryEntry, Mode, PermissionAnswer, Reach, ToolCallRecord, ToolCard,
    ToolCardUpdate, ToolContent, ToolKind, ToolStatus,
};
use tokio_util::sync::CancellationToken;

use crate::host::ClientOps;

use crate::tools::{
    Decision, Roots, ToolContext, ToolError, ToolLimits, ToolRegistry, USER_REJECTED, decide,
};

/// What the calls of a round need from the turn.
pub struct DispatchContext<'a> {
    pub tools: &'a ToolRegistry,
    /// The session's mode now: read at each decision, so a mode changed mid-turn governs
    /// the very next call.
    pub mode: &'a (dyn Fn() -> Mode + Sync),
    pub cwd: &'a Path,
    pub home: Option<&'a Path>,
    /// Where the session's tools work freely (the project, plan and extra directories).
    pub roots: &'a Roots,
    pub rules: &'a Mutex<AlwaysRules>,
    pub limits: &'a ToolLimits,
    pub client: &'a dyn ClientOps,
    pub cancel: &'a CancellationToken,
}

/// Why the round's calls stopped early. The results gathered so far are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DispatchStop {
    /// The turn was cancelled (during a permission question or a running tool).
    Cancelled,
    /// The client went away; the turn cannot go on.
    Abort(String),
}

/// How long a cancelled tool gets to stop on its own (a command killing and releasing its
/// terminal) before the turn stops waiting for it.
const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// What a card cancelled while it waited or ran ends with.
const CANCELLED: &str = "Cancelled: the turn was stopped before this call finished.";

/// The result of one call for the model.
struct CallResult {
    output: String,
    is_error: bool,
}

/// Runs `calls` in order (consecutive read-only calls together) and returns one `ToolResult`
/// entry per call, in call order.
pub async fn run_calls(
    ctx: &DispatchContext<'_>,
    calls: &[ToolCallRecord],
) -> (Vec<HistoryEntry>, Option<DispatchStop>) {
    let mut results = Vec::new();
    let mut index = 0;
    while index < calls.len() {
        let batch_end = if ctx.tools.runs_concurrently(&calls[index].name) {
            calls[index..]
                .iter()
                .position(|c| !ctx.tools.runs_concurrently(&c.name))
                .map_or(calls.len(), |n| index + n)
        } else {
            index + 1
        };
        let outcomes = join_all(
            calls[index..batch_end]
                .iter()
                .map(|call| run_call(ctx, call)),
        )
        .await;
        for (call, outcome) in calls[index..batch_end].iter().zip(outcomes) {
            match outcome {
                Ok(result) => results.push(HistoryEntry::ToolResult {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    output: result.output,
                    is_error: result.is_error,
                }),
                Err(stop) => {
                    // Every call still gets an answer, so the history stays paired.
                    results.extend(calls[results.len()..].iter().map(|c| {
                        HistoryEntry::ToolResult {
                            call_id: c.id.clone(),
                            name: c.name.clone(),
                            output: "The turn was stopped before this call finished.".into(),
                            is_error: true,
                        }
                    }));
                    return (results, Some(stop));
                }
            }
        }
        index = batch_end;
    }
    (results, None)
}

async fn run_call(
    ctx: &DispatchContext<'_>,
    call: &ToolCallRecord,
) -> Result<CallResult, DispatchStop> {
    let tool_ctx = ToolContext {
        cwd: ctx.cwd,
        home: ctx.home,
        client: ctx.client,
        call_id: &call.id,
        cancel: ctx.cancel,
        limits: ctx.limits,
    };
    // A tool the mode does not offer (bash in plan mode) still goes through the policy, so
    // the model hears why it cannot run rather than that it does not exist.
    let Some(handler) = ctx.tools.get(&call.name) else {
        let names: Vec<String> = ctx
            .tools
            .specs_for_mode((ctx.mode)())
            .into_iter()
            .map(|s| s.name)
            .collect();
        let message = format!(
            "Unknown tool `{}`. Available tools: {}.",
            call.name,
            names.join(", ")
        );
        return Ok(fail_card(ctx, call, &call.name, ToolKind::Other, message));
    };
    let prepared =
        match until_cancelled(ctx.cancel, handler.prepare(&call.arguments, &tool_ctx)).await {
            Ok(prepared) => prepared,
            Err(err) => return stop_or_fail(ctx, call, err, ToolKind::Other),
        };
    let card = prepared.card(call.id.clone(), call.arguments.clone());
    ctx.client
        .send(AgentEvent::ToolCallStarted { card: card.clone() });
    let subject = prepared.subject(handler.name());
    let decision = decide((ctx.mode)(), &subject, ctx.roots, &lock(ctx.rules));
    match decision {
        Decision::Allow => {}
        Decision::Deny(reason) => return Ok(finish_failed(ctx, call, reason)),
        Decision::Ask(reach) => {
            let answer = match ctx.client.request_permission(&card, reach).await {
                // An answer about one place outside the project is no answer about others.
                PermissionAnswer::AllowAlways if reach == Reach::OutsideRoots => {
                    PermissionAnswer::AllowOnce
                }
                answer => answer,
            };
            if answer == PermissionAnswer::Cancelled || ctx.cancel.is_cancelled() {
                finish_failed(ctx, call, CANCELLED.to_string());
                return Err(DispatchStop::Cancelled);
            }
            lock(ctx.rules).remember(subject.rule_key(), answer);
            if !answer.allows() {
                return Ok(finish_failed(ctx, call, USER_REJECTED.to_string()));
            }
        }
    }
    update(
        ctx,
        call,
        ToolCardUpdate {
            status: Some(ToolStatus::InProgress),
            ..Default::default()
        },
    );
    let run = handler.run(&call.arguments, &prepared, &tool_ctx);
    match until_cancelled(ctx.cancel, run).await {
        Ok(output) => {
            update(ctx, call, output.card_update());
            Ok(CallResult {
                output: output.for_model,
                is_error: output.failed,
            })
        }
        // The card is already on screen: end it failed rather than showing it again, and
        // never leave it running: a card with no terminal status shows as running forever,
        // live and on replay.
        Err(ToolError::Model(message)) => Ok(finish_failed(ctx, call, message)),
        Err(ToolError::Cancelled) => {
            finish_failed(ctx, call, CANCELLED.to_string());
            Err(DispatchStop::Cancelled)
        }
        Err(ToolError::Abort(message)) => {
            finish_failed(ctx, call, format!("Stopped: {message}"));
            Err(DispatchStop::Abort(message))
        }
    }
}

/// Runs a tool step until it ends or the turn is cancelled. A cancelled step gets
/// [`CANCEL_GRACE`] to end by itself (tools stop their work on cancel and clean up); one that
/// does not — blocked on a special file, a hung client — is dropped, so no tool can hold a
/// session's turn for good.
async fn until_cancelled<T>(
    cancel: &CancellationToken,
    step: impl Future<Output = Result<T, ToolError>>,
) -> Result<T, ToolError> {
    tokio::pin!(step);
    tokio::select! {
        result = &mut step => result,
        () = cancel.cancelled() => {
            match tokio::time::timeout(CANCEL_GRACE, &mut step).await {
                Ok(result) => result,
                Err(_) => {
                    tracing::warn!("a tool did not stop within {CANCEL_GRACE:?} of the cancel");
                    Err(ToolError::Cancelled)
                }
            }
        }
    }
}

fn stop_or_fail(
    ctx: &DispatchContext<'_>,
    call: &ToolCallRecord,
    err: ToolError,
    kind: ToolKind,
) -> Result<CallResult, DispatchStop> {
    match err {
        ToolError::Model(message) => Ok(fail_card(ctx, call, &call.name, kind, message)),
        ToolError::Cancelled => Err(DispatchStop::Cancelled),
        ToolError::Abort(message) => Err(DispatchStop::Abort(message)),
    }
}

/// A call that failed before its card was shown: show it failed, with the reason.
fn fail_card(
    ctx: &DispatchContext<'_>,
    call: &ToolCallRecord,
    title: &str,
    kind: ToolKind,
    message: String,
) -> CallResult {
    ctx.client.send(AgentEvent::ToolCallStarted {
        card: ToolCard {
            id: call.id.clone(),
            title: title.to_string(),
            kind,
            status: ToolStatus::Failed,
            locations: Vec::new(),
            content: vec![ToolContent::Text {
                text: message.clone(),
            }],
            raw_input: call.arguments.clone(),
        },
    });
    CallResult {
        output: message,
        is_error: true,
    }
}

/// A shown card that ends failed with `message` (refused, rejected).
fn finish_failed(ctx: &DispatchContext<'_>, call: &ToolCallRecord, message: String) -> CallResult {
    update(
        ctx,
        call,
        ToolCardUpdate {
            status: Some(ToolStatus::Failed),
            content: Some(vec![ToolContent::Text {
                text: message.clone(),
            }]),
            ..Default::default()
        },
    );
    CallResult {
        output: message,
        is_error: true,
    }
}

fn update(ctx: &DispatchContext<'_>, call: &ToolCallRecord, update: ToolCardUpdate) {
    ctx.client.send(AgentEvent::ToolCallUpdated {
        id: call.id.clone(),
        update,
    });
}

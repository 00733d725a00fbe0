//! The turn loop: one user prompt, as many model rounds as it takes, exactly one outcome.

use futures::StreamExt;
use hearth_backend::{BackendError, BackendEvent, ContentPart, FinishReason, Progress, Usage};
use tokio_util::sync::CancellationToken;

use super::catalog::{Catalog, ModelRef};
use super::client_ops::ClientOps;
use super::event::AgentEvent;
use super::history::HistoryEntry;
use super::request::build_request;
use crate::config::AgentSettings;

/// How a prompt turn ended. Exactly one per prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    EndTurn,
    /// The model hit its token limit.
    MaxTokens,
    /// The turn made `max_turn_requests` model requests.
    MaxTurnRequests,
    /// The server refused to answer (content filter).
    Refusal,
    Cancelled,
}

/// Why a turn failed. Every variant ends the turn; the history keeps what was produced.
#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    /// No model is selected and none could be chosen. Shown to the user.
    #[error("no model selected: configure an endpoint (see `hearth --help`) or pick a model")]
    NoModel,
    /// The selected model names an endpoint that no longer exists. Shown to the user.
    #[error("endpoint `{0}` is not configured")]
    UnknownEndpoint(String),
    /// The backend failed; the message names the endpoint and what happened.
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// Everything a turn needs besides the history it extends.
pub struct TurnContext<'a> {
    pub catalog: &'a Catalog,
    pub model: Option<&'a ModelRef>,
    pub system_prompt: &'a str,
    pub client: &'a dyn ClientOps,
    pub cancel: &'a CancellationToken,
    pub settings: &'a AgentSettings,
}

/// What one model round produced.
#[derive(Debug, Default)]
struct Round {
    text: String,
    reasoning: String,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
    cancelled: bool,
}

/// Runs one prompt to completion. The prompt and every round are appended to `history`, also
/// when the turn is cancelled or fails part-way.
pub async fn run_turn(
    ctx: &TurnContext<'_>,
    history: &mut Vec<HistoryEntry>,
    prompt: Vec<ContentPart>,
) -> Result<StopReason, TurnError> {
    history.push(HistoryEntry::User { content: prompt });
    let model = ctx.model.ok_or(TurnError::NoModel)?;
    let endpoint = ctx
        .catalog
        .endpoint(&model.endpoint)
        .ok_or_else(|| TurnError::UnknownEndpoint(model.endpoint.clone()))?;

    #[allow(
        clippy::never_loop,
        reason = "rounds continue once tool calls are dispatched"
    )]
    for _ in 0..ctx.settings.max_turn_requests {
        if ctx.cancel.is_cancelled() {
            return Ok(StopReason::Cancelled);
        }
        let request = build_request(&endpoint.config, &model.model, ctx.system_prompt, history);
        let stream = endpoint.backend.stream(request, ctx.cancel.child_token());
        let (round, error) = stream_round(ctx, stream).await;
        record_round(history, &round);
        if let Some(usage) = round.usage {
            report_usage(ctx, endpoint.config.context_window, usage);
        }
        if round.cancelled {
            return Ok(StopReason::Cancelled);
        }
        if let Some(err) = error {
            return Err(err.into());
        }
        // Tool calls would continue the loop here; a round without calls ends the turn.
        return Ok(match round.finish {
            Some(FinishReason::Length) => StopReason::MaxTokens,
            Some(FinishReason::ContentFilter) => StopReason::Refusal,
            _ => StopReason::EndTurn,
        });
    }
    ctx.client.send(AgentEvent::Notice {
        text: format!(
            "Stopped after {} model requests in one turn (agent.max_turn_requests).",
            ctx.settings.max_turn_requests
        ),
    });
    Ok(StopReason::MaxTurnRequests)
}

/// Streams one round to the client. Returns what arrived, plus the error that ended it early.
async fn stream_round(
    ctx: &TurnContext<'_>,
    mut stream: hearth_backend::EventStream,
) -> (Round, Option<BackendError>) {
    let mut round = Round::default();
    loop {
        let next = tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => {
                round.cancelled = true;
                // Dropping the stream closes the upstream request.
                return (round, None);
            }
            next = stream.next() => next,
        };
        match next {
            None => return (round, None),
            Some(Err(err)) => {
                if ctx.cancel.is_cancelled() {
                    round.cancelled = true;
                    return (round, None);
                }
                return (round, Some(err));
            }
            Some(Ok(event)) => apply_event(ctx, &mut round, event),
        }
    }
}

fn apply_event(ctx: &TurnContext<'_>, round: &mut Round, event: BackendEvent) {
    match event {
        BackendEvent::Text { text } => {
            round.text.push_str(&text);
            ctx.client.send(AgentEvent::AgentText { text });
        }
        BackendEvent::Reasoning { text } => {
            round.reasoning.push_str(&text);
            ctx.client.send(AgentEvent::AgentThought { text });
        }
        BackendEvent::ToolCall { call } => {
            tracing::debug!(name = %call.name, "native tool call (tools are not offered yet)");
        }
        BackendEvent::Usage { usage } => round.usage = Some(usage),
        BackendEvent::Progress { progress } => ctx.client.send(AgentEvent::Notice {
            text: describe(&progress),
        }),
        BackendEvent::Finished { reason } => round.finish = Some(reason),
    }
}

fn describe(progress: &Progress) -> String {
    match progress {
        Progress::LoadingModel {
            model,
            fraction: Some(f),
        } => format!("Loading {model}: {:.0}%", f * 100.0),
        Progress::LoadingModel {
            model,
            fraction: None,
        } => format!("Loading {model}…"),
        Progress::Prefill { done, total } => format!("Reading the prompt: {done}/{total} tokens"),
        Progress::ColdPrefill { reason } => {
            format!("Reading the whole conversation again ({reason})")
        }
    }
}

fn record_round(history: &mut Vec<HistoryEntry>, round: &Round) {
    if round.text.is_empty() && round.reasoning.is_empty() {
        return;
    }
    history.push(HistoryEntry::Assistant {
        text: round.text.clone(),
        reasoning: (!round.reasoning.is_empty()).then(|| round.reasoning.clone()),
        tool_calls: Vec::new(),
    });
}

fn report_usage(ctx: &TurnContext<'_>, window: Option<u32>, usage: Usage) {
    if let Some(size) = window {
        let used = u64::from(usage.prompt_tokens) + u64::from(usage.completion_tokens);
        ctx.client.send(AgentEvent::Usage {
            used,
            size: u64::from(size),
        });
    }
}

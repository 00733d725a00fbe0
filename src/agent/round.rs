//! One model round: stream the answer through the parser to the client, and collect the tool
//! calls it made (in-band Hermes/XML or native), repaired and validated.

use futures::StreamExt;
use hearth_backend::{
    BackendError, BackendEvent, FinishReason, NativeToolCall, Progress, ToolSpec, Usage,
};
use hearth_conversation::{AgentEvent, HistoryEntry, ToolCallId, ToolCallRecord};
use tokio_util::sync::CancellationToken;

use super::runaway;
use crate::host::ClientOps;
use crate::parse::{
    Malformed, MalformedReason, ParseEvent, ParsedCall, StreamEnd, StreamParser, repair_native_call,
};

/// What one model round produced.
#[derive(Debug, Default)]
pub struct Round {
    pub text: String,
    pub reasoning: String,
    pub finish: Option<FinishReason>,
    pub usage: Option<Usage>,
    pub cancelled: bool,
    /// The reply ran away (blank lines or one line over and over) and was cut short.
    pub runaway: bool,
    /// Every call in the order the model wrote them; `Some` for calls that could not be
    /// repaired (their record keeps the history paired).
    pub calls: Vec<(ToolCallRecord, Option<Malformed>)>,
}

impl Round {
    /// Appends the assistant's message (text, reasoning and every call, malformed ones too, so
    /// each result that follows answers a call).
    pub fn record(&self, history: &mut Vec<HistoryEntry>) {
        let calls: Vec<ToolCallRecord> = self.calls.iter().map(|(c, _)| c.clone()).collect();
        if self.text.is_empty() && self.reasoning.is_empty() && calls.is_empty() {
            return;
        }
        history.push(HistoryEntry::Assistant {
            text: self.text.clone(),
            reasoning: (!self.reasoning.is_empty()).then(|| self.reasoning.clone()),
            tool_calls: calls,
        });
    }
}

/// Where a round's output goes.
pub struct RoundSink<'a> {
    pub client: &'a dyn ClientOps,
    pub cancel: &'a CancellationToken,
    pub tools: &'a [ToolSpec],
    pub parser: StreamParser,
    /// The request's completion limit: a round that used all of it was cut, whatever finish
    /// reason the server gave (vLLM says `tool_calls` for a call cut by `max_tokens`).
    pub max_tokens: Option<u32>,
    /// Native calls, held until the stream ends: only then is it known whether the last one
    /// was cut by the token limit.
    pub native: Vec<NativeToolCall>,
}

/// Streams one round to the client. Returns what arrived, plus the error that ended it early.
pub async fn stream_round(
    mut sink: RoundSink<'_>,
    mut stream: hearth_backend::EventStream,
) -> (Round, Option<BackendError>) {
    let mut round = Round::default();
    loop {
        let next = tokio::select! {
            biased;
            () = sink.cancel.cancelled() => {
                round.cancelled = true;
                // Dropping the stream closes the upstream request; calls are never run.
                let events = sink.parser.finish(StreamEnd::Length);
                apply_parsed(&sink, &mut round, events, false);
                take_native(&mut sink, &mut round, StreamEnd::Stop);
                return (round, None);
            }
            next = stream.next() => next,
        };
        match next {
            None => {
                let end = StreamEnd::from_backend(
                    round.finish.as_ref().unwrap_or(&FinishReason::Stop),
                    round.usage.map(|u| u.completion_tokens),
                    sink.max_tokens,
                );
                let events = sink.parser.finish(end);
                apply_parsed(&sink, &mut round, events, true);
                take_native(&mut sink, &mut round, end);
                return (round, None);
            }
            Some(Err(err)) => {
                // A broken stream's unfinished calls are never executed.
                let events = sink.parser.finish(StreamEnd::Length);
                apply_parsed(&sink, &mut round, events, false);
                take_native(&mut sink, &mut round, StreamEnd::Stop);
                round.cancelled = sink.cancel.is_cancelled();
                let error = (!round.cancelled).then_some(err);
                return (round, error);
            }
            Some(Ok(event)) => {
                let shown = round.text.len();
                apply_event(&mut sink, &mut round, event);
                if round.text.len() > shown && runaway::is_runaway(&round.text) {
                    // Dropping the stream stops the generation; what it said so far is kept.
                    let events = sink.parser.finish(StreamEnd::Stop);
                    apply_parsed(&sink, &mut round, events, true);
                    take_native(&mut sink, &mut round, StreamEnd::Stop);
                    round.runaway = true;
                    round.text.truncate(round.text.trim_end().len());
                    return (round, None);
                }
            }
        }
    }
}

fn apply_event(sink: &mut RoundSink<'_>, round: &mut Round, event: BackendEvent) {
    match event {
        BackendEvent::Text { text } => {
            let events = sink.parser.feed(&text);
            apply_parsed(sink, round, events, true);
        }
        BackendEvent::Reasoning { text } => {
            let events = sink.parser.feed_reasoning(&text);
            apply_parsed(sink, round, events, true);
        }
        BackendEvent::ToolCall { call } => sink.native.push(call),
        BackendEvent::Usage { usage } => round.usage = Some(usage),
        BackendEvent::Progress { progress } => sink.client.send(AgentEvent::Notice {
            text: describe(&progress),
        }),
        BackendEvent::Finished { reason } => round.finish = Some(reason),
    }
}

/// Repairs the round's native calls into its call list. When the round was cut by the token
/// limit, the last call's arguments must be whole JSON as written: repairing them (closing a
/// brace the limit cut off) would run a call the model never finished.
fn take_native(sink: &mut RoundSink<'_>, round: &mut Round, end: StreamEnd) {
    let calls = std::mem::take(&mut sink.native);
    let last = calls.len().saturating_sub(1);
    for (i, call) in calls.into_iter().enumerate() {
        let cut = end == StreamEnd::Length
            && i == last
            && serde_json::from_str::<serde_json::Value>(&call.arguments).is_err();
        let repaired = if cut {
            Err(Malformed {
                raw: call.arguments.clone(),
                reason: MalformedReason::Truncated,
            })
        } else {
            repair_native_call(&call, sink.tools)
        };
        match repaired {
            Ok(parsed) => round.calls.push((record(parsed), None)),
            Err(malformed) => round
                .calls
                .push((malformed_record(&malformed), Some(malformed))),
        }
    }
}

fn apply_parsed(
    sink: &RoundSink<'_>,
    round: &mut Round,
    events: Vec<ParseEvent>,
    keep_calls: bool,
) {
    for event in events {
        match event {
            ParseEvent::Text(text) => {
                round.text.push_str(&text);
                sink.client.send(AgentEvent::AgentText { text });
            }
            ParseEvent::Reasoning(text) => {
                round.reasoning.push_str(&text);
                sink.client.send(AgentEvent::AgentThought { text });
            }
            ParseEvent::ToolCall(parsed) if keep_calls => round.calls.push((record(parsed), None)),
            ParseEvent::Malformed(malformed) if keep_calls => {
                round
                    .calls
                    .push((malformed_record(&malformed), Some(malformed)));
            }
            ParseEvent::ToolCall(_) | ParseEvent::Malformed(_) => {}
            ParseEvent::ReasoningCut => sink.client.send(AgentEvent::Notice {
                text: "The token limit cut the model off while it was still reasoning.".into(),
            }),
        }
    }
}

/// hearth's own ids: unique in the session whatever the server generated.
fn record(parsed: ParsedCall) -> ToolCallRecord {
    if !parsed.repairs.is_empty() {
        tracing::debug!(tool = %parsed.name, repairs = ?parsed.repairs, "repaired a tool call");
    }
    ToolCallRecord {
        id: ToolCallId::generate(),
        name: parsed.name,
        arguments: parsed.arguments,
    }
}

fn malformed_record(m: &Malformed) -> ToolCallRecord {
    let name = match &m.reason {
        MalformedReason::UnknownTool { name, .. } => name.clone(),
        MalformedReason::WrongKeys { tool, .. }
        | MalformedReason::ArgumentsNotObject { tool, .. }
        | MalformedReason::MissingRequired { tool, .. }
        | MalformedReason::WrongType { tool, .. } => tool.clone(),
        _ => "invalid_tool_call".to_string(),
    };
    ToolCallRecord {
        id: ToolCallId::generate(),
        name,
        arguments: serde_json::Value::String(m.raw.clone()),
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
        Progress::Queued { ahead: 1 } => "Waiting for the model: 1 request ahead".to_string(),
        Progress::Queued { ahead } => format!("Waiting for the model: {ahead} requests ahead"),
    }
}

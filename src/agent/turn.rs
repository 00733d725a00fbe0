//! The turn loop: one user prompt, as many model rounds as it takes, exactly one outcome.

use hearth_backend::{BackendError, CompletionRequest, ContentPart, FinishReason, ToolSpec, Usage};
use hearth_conversation::{
    AgentEvent, HistoryEntry, Mode, ToolCallRecord, ToolCard, ToolContent, ToolKind, ToolStatus,
};

use super::answer_code::{broken_write_ask, write_from_answer};
use super::answer_edit::{asked_file_write, edits_from_answer};
use super::code_fix::fix_answer_code;
use super::digest::digest_request;
use super::dispatch::{DispatchStop, run_calls};
use super::edit_scope::{narrow_calls, note_left_out};
use super::file_request::FileAsks;
use super::grounding::{hash_note, hash_nudge, unseen_hash};
use super::loop_guard::{LoopGuard, Silence, echoes, repeat_answer, silence_nudge};
use super::model_context::request_profile;
use super::narrated::{narrated_tool, narration_nudge};
use super::reminder::{append_reminder, requested_task, task_reminder};
use super::request_fit::{CallHolding, Fitted, RequestShape, offered_tools};
use super::round::{RoundSink, stream_round};
use super::turn_context::TurnContext;
use super::turn_fit::Fitting;
use super::unchanged::ChangeCheck;
use super::worked_example::{
    EXAMPLE_COPY_ANSWER, copies_the_example, shows_worked_example, with_worked_example,
};
use super::write_check::check_writes;
use crate::config::Assist;
use crate::context::{TextProfile, TokenCounter};
use crate::parse::{
    MAX_MALFORMED_ROUNDS, Malformed, ParserConfig, ResolvedFormat, StreamParser, call_stop_strings,
    corrective_message, give_up_message, resolve_format,
};
use crate::tools::{BASH, EDIT_FILE, WRITE_FILE};

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

impl StopReason {
    /// The reason as headless output names it (`end_turn`, `max_tokens`, …).
    pub fn id(self) -> &'static str {
        match self {
            Self::EndTurn => "end_turn",
            Self::MaxTokens => "max_tokens",
            Self::MaxTurnRequests => "max_turn_requests",
            Self::Refusal => "refusal",
            Self::Cancelled => "cancelled",
        }
    }
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
    /// The client went away mid-turn ([`crate::host::ClientOpsError::Disconnected`]): nothing
    /// more can be done for this prompt; what the round produced is kept.
    #[error("the turn was aborted: {0}")]
    Aborted(String),
    /// The turn could not be set up: one of the session's roots (its working directory, plan
    /// directory or an extra directory) cannot be resolved. Shown to the user; nothing was
    /// sent to the model.
    #[error("cannot set up the turn: directory {}: {source}", path.display())]
    Roots {
        path: std::path::PathBuf,
        #[source]
        source: crate::tools::PathError,
    },
}

/// Runs one prompt to completion: rounds until the model stops calling tools. The prompt and
/// every round are appended to `history`, also when the turn is cancelled or fails part-way.
///
/// Every request is projected into the model's window first (never the raw history), and
/// summarised once it passes the compaction threshold; a prompt the server still rejects as
/// too long is retried once with a tighter budget.
pub async fn run_turn(
    ctx: &TurnContext<'_>,
    history: &mut Vec<HistoryEntry>,
    prompt: Vec<ContentPart>,
) -> Result<StopReason, TurnError> {
    history.push(HistoryEntry::User { content: prompt });
    let turn_start = history.len() - 1;
    let model = ctx.model.ok_or(TurnError::NoModel)?;
    let endpoint = ctx
        .catalog
        .endpoint(&model.endpoint)
        .ok_or_else(|| TurnError::UnknownEndpoint(model.endpoint.clone()))?;
    let model_context = ctx.contexts.get(endpoint, model).await;
    let specs = offered_tools(ctx.tools, ctx.mode, &model_context, &ctx.settings.assists);
    // The parser knows every tool, offered or not, so a call to one the mode leaves out is
    // refused by the policy with its reason instead of being read as an unknown name.
    let known: Vec<ToolSpec> = ctx.tools.iter().map(|t| t.spec()).collect();
    let format = resolve_format(endpoint.config.tool_format, &model.model);
    let system_prompt = with_worked_example(
        ctx.system_prompt,
        format,
        model_context.window_tokens(),
        &ctx.settings.assists,
    );
    let shape = RequestShape {
        endpoint,
        model: &model.model,
        format,
        system_prompt: &system_prompt,
        tools: &specs,
        context: &model_context,
        constrain_calls: CallHolding::from_assists(&ctx.settings.assists),
    };
    let mut malformed_rounds = 0;
    let mut fitting = Fitting::default();
    let mut guard = LoopGuard::new(ctx.settings.assists.on(Assist::LoopGuard));
    let mut may_nudge_narration = ctx.settings.assists.on(Assist::NarratedCalls);
    let task = requested_task(history);
    // Where the example is shown, a call copied from it is caught against the prompt's words.
    let example_task = task.clone().filter(|_| {
        shows_worked_example(format, model_context.window_tokens(), &ctx.settings.assists)
    });
    let writes_offered = specs
        .iter()
        .any(|s| s.name == WRITE_FILE || s.name == EDIT_FILE);
    let change_check = match &task {
        Some(task)
            if ctx.settings.assists.on(Assist::UnchangedFiles)
                && writes_offered
                && ctx.mode != Mode::Plan =>
        {
            ChangeCheck::start(task, ctx.cwd, ctx.client).await
        }
        _ => None,
    };
    let mut change_nudged = false;
    let mut hash_nudged = !specs.iter().any(|s| s.name == BASH);
    let mut file_asks = FileAsks::default();
    let mut call_due = false;
    let asked = task
        .clone()
        .filter(|_| ctx.settings.assists.on(Assist::RestateTask))
        .unwrap_or_default();

    for _ in 0..ctx.settings.max_turn_requests {
        if ctx.cancel.is_cancelled() {
            return Ok(StopReason::Cancelled);
        }
        let mut fitted = fitting.prepare(ctx, &shape, history).await;
        let counter = model_context.counter(endpoint.backend.as_ref(), &model.model);
        let mut estimated = fitted.projection.tokens;
        let digested = guard.take_answer_due()
            && ask_for_the_answer(ctx, &shape, &history[turn_start..], &mut fitted);
        let turn = &history[turn_start..];
        let file_request = (!digested)
            .then(|| file_asks.next_request(&shape, ctx.system_prompt, turn, &fitted.budget))
            .flatten();
        if let Some(request) = file_request {
            fitted.request = request;
        }
        if digested || file_asks.asking() {
            estimated = request_tokens(&fitted.request, &counter);
        } else if let Some(reminder) = task_reminder(history, &asked) {
            estimated += counter.count(&reminder);
            append_reminder(&mut fitted.request.messages, reminder);
        }
        // After the unchanged_files nudge the answer is a call (where the backend can hold it).
        fitted.request.call_first = std::mem::take(&mut call_due);
        // Only an estimate learns from the text's make-up; exact counts need no scan of it.
        let profile = if model_context.estimates() {
            request_profile(&fitted.request)
        } else {
            TextProfile::default()
        };
        let max_tokens = fitted.request.max_tokens;
        let stream = endpoint
            .backend
            .stream(fitted.request, ctx.cancel.child_token());
        let parser = StreamParser::new(ParserConfig {
            format: endpoint.config.tool_format,
            tools: known.clone(),
            think: model_context.think_start(&model.model),
            text_calls: ctx.settings.assists.text_calls(),
        });
        let sink = RoundSink {
            client: ctx.client,
            cancel: ctx.cancel,
            tools: &known,
            parser,
            max_tokens,
            native: Vec::new(),
        };
        let (round, error) = stream_round(sink, stream).await;
        round.record(history);
        report_usage(
            ctx,
            &shape,
            (&profile, estimated),
            fitted.budget.window,
            round.usage,
        );
        if round.cancelled {
            return Ok(StopReason::Cancelled);
        }
        if let Some(err) = error {
            if fitting.retry_after(ctx, &shape, &err, &round, (&profile, estimated)) {
                continue;
            }
            return Err(err.into());
        }
        // A file asked for whole: its block goes in once every file has been asked for.
        if let Some(ask) = file_asks.answered() {
            join_answers(history);
            if let Some(call) = asked_file_write(ctx, &ask, &round.text).await {
                file_asks.wrote(call);
            }
            if file_asks.more_to_ask() {
                continue;
            }
            let writes = file_asks.take_writes();
            if writes.is_empty() {
                return Ok(StopReason::EndTurn);
            }
            return write_answer_code(ctx, history, writes).await;
        }
        if round.calls.is_empty() {
            if matches!(round.finish, None | Some(FinishReason::Stop)) {
                // A runaway, or a line of the instructions said back, answers nothing.
                let echoed = echoes(&round.text, &system_prompt);
                let said = if round.runaway || echoed {
                    ""
                } else {
                    round.text.as_str()
                };
                // A hash no tool showed (in a runaway answer too): computed with a call (once per
                // turn), else owned up to.
                if ctx.settings.assists.on(Assist::GroundHashes)
                    && let Some(hash) = unseen_hash(&round.text, history)
                {
                    tracing::info!(hash, "the answer gave a hash that no tool showed");
                    if !std::mem::replace(&mut hash_nudged, true) {
                        let request = task.as_deref().unwrap_or_default();
                        history.push(hash_nudge(&hash, request, ctx.cwd, format));
                        call_due = true;
                        continue;
                    }
                    let note = hash_note(&hash);
                    if let Some(HistoryEntry::Assistant { text, .. }) = history.last_mut() {
                        text.push_str(&note);
                    }
                    ctx.client.send(AgentEvent::AgentText { text: note });
                }
                match guard.silence(said) {
                    Silence::Nudge => {
                        history.push(silence_nudge(echoed));
                        continue;
                    }
                    Silence::GiveUp(why) => {
                        ctx.client.send(AgentEvent::AgentText {
                            text: format!("\n\n{why}"),
                        });
                        return Ok(StopReason::EndTurn);
                    }
                    Silence::Answered => {}
                }
                // An answer that tells the user to run one of our tools: once per turn, ask
                // the model to make the call itself.
                let offered = specs.iter().map(|s| s.name.as_str());
                if may_nudge_narration && let Some(tool) = narrated_tool(said, offered) {
                    may_nudge_narration = false;
                    tracing::info!(tool, "the answer described a call instead of making it");
                    history.push(narration_nudge(tool, format));
                    continue;
                }
                // A request to change files that left them all as they were: the answer's code
                // where it fits them, else (once per turn) a nudge to make the change.
                if let Some(check) = &change_check
                    && !check.changed(ctx.client).await
                {
                    tracing::info!("the answer left the files it was asked to change as they were");
                    if ctx.settings.assists.on(Assist::AnswerEdits) {
                        let calls = edits_from_answer(ctx, check, &history[turn_start..]).await;
                        if !calls.is_empty() {
                            return write_answer_code(ctx, history, calls).await;
                        }
                    }
                    if !change_nudged {
                        if ctx.settings.assists.on(Assist::AnswerEdits) && file_asks.start(check) {
                            continue;
                        }
                        change_nudged = true;
                        history.push(check.nudge(format));
                        call_due = true;
                        continue;
                    }
                }
                // A file the turn wrote that does not parse, and the code it needs in the
                // answer: the write the model left out.
                if ctx.settings.assists.on(Assist::CheckWrites)
                    && let Some(call) = write_from_answer(ctx, &history[turn_start..]).await
                {
                    return write_answer_code(ctx, history, vec![call]).await;
                }
                // Still broken, and no block for it: the file is asked for again, whole.
                if ctx.settings.assists.on(Assist::AnswerEdits)
                    && ctx.settings.assists.on(Assist::CheckWrites)
                    && let Some(ask) = broken_write_ask(ctx, &history[turn_start..]).await
                    && file_asks.start_with(ask)
                {
                    continue;
                }
                // Code in the answer that fails its checker: asked for again, fixed.
                if ctx.settings.assists.on(Assist::CheckAnswerCode)
                    && let Some(request) = &task
                {
                    let budget = &fitted.budget;
                    fix_answer_code(ctx, &shape, history, turn_start, request, budget).await;
                    if ctx.cancel.is_cancelled() {
                        return Ok(StopReason::Cancelled);
                    }
                }
            }
            return Ok(match round.finish {
                Some(FinishReason::Length) => StopReason::MaxTokens,
                Some(FinishReason::ContentFilter) => StopReason::Refusal,
                _ => StopReason::EndTurn,
            });
        }
        // A model that only writes broken calls is stopped rather than corrected forever.
        let last_malformed = round.calls.iter().rev().find_map(|(_, m)| m.as_ref());
        malformed_rounds = if round.calls.iter().all(|(_, m)| m.is_some()) {
            malformed_rounds + 1
        } else {
            0
        };
        if malformed_rounds >= MAX_MALFORMED_ROUNDS
            && let Some(last) = last_malformed
        {
            ctx.client.send(AgentEvent::AgentText {
                text: format!("\n\n{}", give_up_message(last)),
            });
            return Ok(StopReason::EndTurn);
        }
        let unrun = Unrun {
            format,
            example_task: example_task.as_deref(),
            request: task
                .as_deref()
                .filter(|_| ctx.settings.assists.on(Assist::EditScope)),
        };
        if let Some(stop) = run_round_calls(ctx, history, &round.calls, unrun, &mut guard).await? {
            return Ok(stop);
        }
        // Only invented or broken calls for a change to named files: the files are asked for
        // whole instead.
        if malformed_rounds > 0
            && ctx.settings.assists.on(Assist::AnswerEdits)
            && let Some(check) = &change_check
            && !check.changed(ctx.client).await
            && file_asks.start(check)
        {
            tracing::info!("asking for the files to change whole after a round of broken calls");
        }
    }
    ctx.client.send(AgentEvent::AgentText {
        text: format!(
            "\n\nStopped after {} model requests in one turn (agent.max_turn_requests).",
            ctx.settings.max_turn_requests
        ),
    });
    Ok(StopReason::MaxTurnRequests)
}

/// How calls that are not run are told apart and answered.
#[derive(Clone, Copy)]
struct Unrun<'a> {
    format: ResolvedFormat,
    /// The request's words, where the worked example was shown: a call copied from it is not
    /// run.
    example_task: Option<&'a str>,
    /// The request's words, where edits are held to what it names (edit_scope).
    request: Option<&'a str>,
}

impl Unrun<'_> {
    fn copied(&self, call: &ToolCallRecord) -> bool {
        self.example_task
            .is_some_and(|task| copies_the_example(call, task))
    }
}

/// Answers the round's calls in the order the model wrote them: runs of good calls go to the
/// dispatcher; malformed ones get a corrective answer, and repeats and copies of the worked
/// example a nudge, none of them running. A round of only repeats and copies counts as a
/// repeated round for the loop guard. Returns a stop reason when the turn ends.
async fn run_round_calls(
    ctx: &TurnContext<'_>,
    history: &mut Vec<HistoryEntry>,
    calls: &[(ToolCallRecord, Option<Malformed>)],
    unrun: Unrun<'_>,
    guard: &mut LoopGuard,
) -> Result<Option<StopReason>, TurnError> {
    let runnable = |guard: &LoopGuard, (call, malformed): &(ToolCallRecord, Option<Malformed>)| {
        malformed.is_none() && !guard.is_repeat(call) && !unrun.copied(call)
    };
    let all_repeats = calls
        .iter()
        .all(|(call, m)| m.is_none() && (guard.is_repeat(call) || unrun.copied(call)));
    if guard.repeated_round(all_repeats) {
        let name = calls.first().map_or("", |(c, _)| c.name.as_str());
        let why = if calls.iter().all(|(call, _)| unrun.copied(call)) {
            format!(
                "kept copying the instructions' example call to `{name}` instead of doing the task"
            )
        } else {
            format!("kept repeating the same `{name}` call, and it would change nothing")
        };
        ctx.client.send(AgentEvent::AgentText {
            text: format!("\n\nStopped: the model {why}."),
        });
        return Ok(Some(StopReason::EndTurn));
    }
    let mut index = 0;
    while index < calls.len() {
        if !runnable(guard, &calls[index]) {
            let (call, malformed) = &calls[index];
            let (title, message) = match malformed {
                Some(m) => (
                    format!("Malformed call to {}", call.name),
                    corrective_message(m, unrun.format),
                ),
                None if unrun.copied(call) => (
                    format!("Example call to {}", call.name),
                    EXAMPLE_COPY_ANSWER.to_string(),
                ),
                None => (
                    format!("Repeated call to {}", call.name),
                    repeat_answer(history, call),
                ),
            };
            answer_unrun(ctx, history, call, title, message);
            index += 1;
            continue;
        }
        let end = calls[index..]
            .iter()
            .position(|c| !runnable(guard, c))
            .map_or(calls.len(), |n| index + n);
        let good: Vec<ToolCallRecord> = calls[index..end].iter().map(|(c, _)| c.clone()).collect();
        // The loop guard knows each call as the model wrote it, narrowed or not.
        let (run, left_out) = narrow_calls(good.clone(), unrun.request);
        let (mut results, stop) = run_calls(&ctx.dispatch(), &run).await;
        note_left_out(&mut results, &left_out);
        if ctx.settings.assists.on(Assist::CheckWrites) {
            check_writes(ctx, &run, &mut results).await;
        }
        history.extend(results);
        guard.ran(&good, ctx.tools);
        match stop {
            Some(DispatchStop::Cancelled) => return Ok(Some(StopReason::Cancelled)),
            Some(DispatchStop::Abort(message)) => return Err(TurnError::Aborted(message)),
            None => {}
        }
        index = end;
    }
    Ok(None)
}

/// Runs `calls`, made from the turn's answer, as part of the answer's round, and ends the turn.
async fn write_answer_code(
    ctx: &TurnContext<'_>,
    history: &mut Vec<HistoryEntry>,
    calls: Vec<ToolCallRecord>,
) -> Result<StopReason, TurnError> {
    tracing::info!(
        writes = calls.len(),
        "writing the answer's code to the files it is for"
    );
    match history.last_mut() {
        Some(HistoryEntry::Assistant { tool_calls, .. }) => tool_calls.extend(calls.clone()),
        _ => history.push(HistoryEntry::Assistant {
            text: String::new(),
            reasoning: None,
            tool_calls: calls.clone(),
        }),
    }
    let (results, stop) = run_calls(&ctx.dispatch(), &calls).await;
    history.extend(results);
    match stop {
        Some(DispatchStop::Cancelled) => Ok(StopReason::Cancelled),
        Some(DispatchStop::Abort(message)) => Err(TurnError::Aborted(message)),
        None => Ok(StopReason::EndTurn),
    }
}

/// Makes the last two entries one answer where both are answers without calls: the files of
/// one turn asked for whole answer one after the other.
fn join_answers(history: &mut Vec<HistoryEntry>) {
    let [
        ..,
        HistoryEntry::Assistant {
            text: first,
            tool_calls: none,
            ..
        },
        HistoryEntry::Assistant {
            text: second,
            tool_calls,
            ..
        },
    ] = history.as_mut_slice()
    else {
        return;
    };
    if !none.is_empty() || !tool_calls.is_empty() {
        return;
    }
    let second = std::mem::take(second);
    first.push_str("\n\n");
    first.push_str(&second);
    history.pop();
}

/// A call that is not run (malformed, or a repeat): a failed card for the user, the reason
/// for the model.
fn answer_unrun(
    ctx: &TurnContext<'_>,
    history: &mut Vec<HistoryEntry>,
    call: &ToolCallRecord,
    title: String,
    message: String,
) {
    ctx.client.send(AgentEvent::ToolCallStarted {
        card: ToolCard {
            id: call.id.clone(),
            title,
            kind: ToolKind::Other,
            status: ToolStatus::Failed,
            locations: Vec::new(),
            content: vec![ToolContent::Text {
                text: message.clone(),
            }],
            raw_input: call.arguments.clone(),
        },
    });
    history.push(HistoryEntry::ToolResult {
        call_id: call.id.clone(),
        name: call.name.clone(),
        output: message,
        is_error: true,
    });
}

/// Tells the front end how full the window is after a round: the server's count where it
/// gave one (and the model's context learns from it), else ours for the prompt `sent` (its
/// text profile and our count).
fn report_usage(
    ctx: &TurnContext<'_>,
    shape: &RequestShape<'_>,
    (profile, estimated): (&TextProfile, usize),
    window: u32,
    usage: Option<Usage>,
) {
    let (prompt, completion) = match usage {
        Some(usage) => {
            shape
                .context
                .observe(profile, estimated, usage.prompt_tokens);
            (
                u64::from(usage.prompt_tokens),
                u64::from(usage.completion_tokens),
            )
        }
        None => (estimated as u64, 0),
    };
    ctx.client.send(AgentEvent::Usage {
        used: prompt + completion,
        size: u64::from(window),
    });
}

/// The request after a loop_guard nudge, when the model should now answer in text: the answer
/// digest where that assist is on and the turn fits one (true), else the conversation as it
/// is, insisting on a text answer where answer_round is on: backends that can hold the model
/// to it do, and an in-band format's server stops where a call would open.
fn ask_for_the_answer(
    ctx: &TurnContext<'_>,
    shape: &RequestShape<'_>,
    turn: &[HistoryEntry],
    fitted: &mut Fitted,
) -> bool {
    let assists = &ctx.settings.assists;
    if assists.on(Assist::AnswerDigest)
        && let Some(request) = digest_request(shape, ctx.system_prompt, turn, &fitted.budget)
    {
        fitted.request = request;
        return true;
    }
    if assists.on(Assist::AnswerRound) {
        fitted.request.answer_only = true;
        fitted.request.stop.extend(call_stop_strings(shape.format));
    }
    false
}

/// Our count of a request's messages.
fn request_tokens(request: &CompletionRequest, counter: &dyn TokenCounter) -> usize {
    request
        .messages
        .iter()
        .map(|m| counter.count(&m.plain_text()) + counter.message_overhead())
        .sum()
}

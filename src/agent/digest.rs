//! The answer digest (the answer_digest assist). A small model that has made its calls and then
//! repeats one, or answers nothing, has lost the question under its own transcript: asked again
//! in the same conversation, Qwen2.5-Coder 0.5B echoes a result or a call as JSON. Asked instead
//! in a short request of its own (the user's prompt with what each call of the turn returned
//! put before its words, as attached files are, and no tool block), it answers from the
//! results, as it does from an attached file. Only the request is made up: the history keeps the real rounds, and
//! the answer joins them as the turn's last round.

use std::fmt::Write as _;

use hearth_backend::{CompletionRequest, ContentPart};
use hearth_conversation::{HistoryEntry, ToolCallRecord};
use serde_json::Value;

use super::loop_guard::NOT_RUN;
use super::request::{own_system, request_of_its_own};
use super::request_fit::RequestShape;
use crate::context::{Budget, MESSAGE_OVERHEAD, TokenCounter};

const DIGEST_PROMPT: &str = include_str!("../../prompts/answer_digest.md");

/// Longest part of one result the digest quotes, in characters.
const RESULT_CHARS: usize = 6000;

/// Most tokens the digest's answer may take.
const DIGEST_MAX_TOKENS: u32 = 2048;

/// Longest string argument of a call the digest shows: what a call wrote is its result's
/// business, the call only needs naming.
const ARGUMENT_CHARS: usize = 120;

/// The request that asks for the turn's answer from its results. `turn` is the turn's entries,
/// its prompt first; `system_prompt` the session's own, without the tool block or the worked
/// example. `None` when the turn does not start with a prompt, or the prompt alone does not
/// fit the budget (the caller then asks in the conversation as it is).
pub fn digest_request(
    shape: &RequestShape<'_>,
    system_prompt: &str,
    turn: &[HistoryEntry],
    budget: &Budget,
) -> Option<CompletionRequest> {
    let counter = shape
        .context
        .counter(shape.endpoint.backend.as_ref(), shape.model);
    let (_, user) = digest(system_prompt, turn, &counter, budget.available())?;
    // An answer from results is short; a small model that echoes the results instead runs on
    // until the limit, which on a CPU costs a minute or more.
    let max_tokens = budget.max_tokens.min(DIGEST_MAX_TOKENS);
    Some(request_of_its_own(
        shape,
        DIGEST_PROMPT,
        system_prompt,
        user,
        max_tokens,
    ))
}

/// The digest's system prompt and user message, within `available` tokens: the oldest results
/// are left out first.
fn digest(
    system_prompt: &str,
    turn: &[HistoryEntry],
    counter: &dyn TokenCounter,
    available: usize,
) -> Option<(String, Vec<ContentPart>)> {
    let Some(HistoryEntry::User { content: prompt }) = turn.first() else {
        return None;
    };
    let system = own_system(DIGEST_PROMPT, system_prompt);
    let fixed = counter.count(&system)
        + prompt
            .iter()
            .map(|part| match part {
                ContentPart::Text { text } => counter.count(text),
                ContentPart::Image { .. } => counter.image_tokens(),
            })
            .sum::<usize>()
        + 2 * MESSAGE_OVERHEAD;
    let steps = steps(turn);
    for skipped in 0..=steps.len() {
        let results = result_blocks(&steps[skipped..], skipped);
        if fixed + counter.count(&results) <= available {
            // The results go where attached files go, after them and before the request's
            // own words: the shape in which the small model answers from what it is given.
            let (context, words): (Vec<ContentPart>, Vec<ContentPart>) =
                prompt.iter().cloned().partition(|part| {
                    matches!(part, ContentPart::Text { text } if text.starts_with("<context "))
                });
            // The project's layout is no result and answers nothing: asked for FizzBuzz after
            // listing src twice, the 0.5B gave the listing back as its answer.
            let mut user: Vec<ContentPart> = context
                .into_iter()
                .filter(|part| {
                    !matches!(part, ContentPart::Text { text } if text.starts_with("<context listing="))
                })
                .collect();
            if !results.is_empty() {
                user.push(ContentPart::text(results));
            }
            user.extend(words);
            return Some((system, user));
        }
    }
    None
}

/// A call of the turn that ran, with what it returned.
struct Step<'h> {
    call: &'h ToolCallRecord,
    output: &'h str,
}

/// The turn's calls that ran, in order. Calls that never ran are left out: a malformed one
/// (its record keeps the raw text as a string), a repeat (answered with the earlier result,
/// which is shown once already) and a copy of the worked example.
fn steps(turn: &[HistoryEntry]) -> Vec<Step<'_>> {
    let calls: Vec<&ToolCallRecord> = turn
        .iter()
        .filter_map(|entry| match entry {
            HistoryEntry::Assistant { tool_calls, .. } => Some(tool_calls),
            _ => None,
        })
        .flatten()
        .collect();
    turn.iter()
        .filter_map(|entry| match entry {
            HistoryEntry::ToolResult {
                call_id, output, ..
            } if !output.starts_with(NOT_RUN) => calls
                .iter()
                .find(|c| &c.id == call_id && c.arguments.is_object())
                .map(|call| Step {
                    call,
                    output: output.as_str(),
                }),
            _ => None,
        })
        .collect()
}

/// Each result in a `<context>` block with its call's arguments as attributes, as attached
/// files are shown (`<context path="app.py">`, `<context command="python3 app.py">`). The
/// tool's name is left out: given it, the 0.5B answers about "the context tool" instead of
/// the task. Empty when no call ran: the prompt alone is then the question.
fn result_blocks(steps: &[Step<'_>], skipped: usize) -> String {
    let mut out = String::new();
    if skipped > 0 {
        let _ = write!(
            out,
            "({skipped} earlier tool results are left out for room.)\n\n"
        );
    }
    for step in steps {
        let mut output: String = step.output.chars().take(RESULT_CHARS).collect();
        if output.len() < step.output.len() {
            output.push_str("\n…(cut)");
        }
        let _ = write!(
            out,
            "<context{}>\n{}\n</context>\n\n",
            attributes(&step.call.arguments),
            output.trim_end_matches('\n')
        );
    }
    out
}

/// The call's arguments as ` key="value"` attributes: long values cut, quotes and line breaks
/// made plain so that each stays one attribute.
fn attributes(arguments: &Value) -> String {
    let Value::Object(map) = arguments else {
        return String::new();
    };
    let mut out = String::new();
    for (key, value) in map {
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let mut brief: String = text
            .chars()
            .take(ARGUMENT_CHARS)
            .map(|c| match c {
                '"' => '\'',
                '\n' | '\r' | '\t' => ' ',
                c => c,
            })
            .collect();
        if text.chars().count() > ARGUMENT_CHARS {
            brief.push('…');
        }
        let _ = write!(out, " {key}=\"{brief}\"");
    }
    out
}

#[cfg(test)]
#[path = "digest_tests.rs"]
mod tests;

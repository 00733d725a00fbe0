//! Interprets one finished call block (the text between an opener and its end) as calls,
//! a Malformed attempt, or plain text (docs/qwen-formats.md §4.4–§4.10).

use hearth_backend::ToolSpec;

use serde_json::Value;

use super::config::TextCalls;
use super::event::{Malformed, MalformedReason, ParseEvent, Repair, StreamEnd};
use super::function_tags;
use super::normalize::{Intent, Outcome, to_calls};
use super::repair::parse_values;
use super::xml;

/// Which opener started a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockKind {
    /// `<tool_call>`: a call attempt, whatever its body.
    ToolCall,
    /// A bare `<function=NAME>` naming a declared tool.
    BareFunction,
    /// `<tools>`, `<function_call>`, `<json>` and the other wrappers some models use.
    Alt,
    /// A markdown fence whose body starts like JSON or `<function=`.
    Fence,
    /// A JSON object or array opening the message, with no tags at all.
    BareJson,
}

impl BlockKind {
    fn intent(self) -> Intent {
        match self {
            Self::ToolCall | Self::BareFunction => Intent::Explicit,
            Self::Alt | Self::Fence | Self::BareJson => Intent::Candidate,
        }
    }
}

/// How a block ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// Its closer (or, for bare JSON, the end of the value) was seen.
    Closed,
    /// The next opener or a cut marker ended it: the close tag was lost, the call is complete.
    Superseded,
    /// The stream ended inside it.
    Open(StreamEnd),
}

/// One finished block.
pub(crate) struct Finished<'a> {
    pub kind: BlockKind,
    /// Everything from the opener on, closer included (for `Malformed::raw` and fallback text).
    pub raw: &'a str,
    /// The body between opener and closer.
    pub body: &'a str,
    pub ending: Ending,
}

/// The events a block produces. Text events carry only bytes of `raw` that are visible text.
pub(crate) fn interpret(
    block: &Finished<'_>,
    tools: &[ToolSpec],
    text_calls: TextCalls,
) -> Vec<ParseEvent> {
    let intent = block.kind.intent();
    let malformed = |reason| {
        vec![ParseEvent::Malformed(Malformed {
            raw: block.raw.to_string(),
            reason,
        })]
    };
    let as_text = || vec![ParseEvent::Text(block.raw.to_string())];
    if block.ending == Ending::Open(StreamEnd::Length) {
        // Cut by the token limit: never executed. A candidate that names a declared tool was a
        // call attempt; anything else is just text.
        let names_tool = tools
            .iter()
            .any(|t| block.raw.contains(&format!("\"{}\"", t.name)));
        return if intent == Intent::Explicit || names_tool {
            malformed(MalformedReason::Truncated)
        } else {
            as_text()
        };
    }
    if block.body.trim().is_empty() {
        // `<tool_call></tool_call>` with both tags written is prose naming the tags; an opener
        // left empty at the end of the stream was a call that never came.
        return match (intent, block.ending) {
            (Intent::Explicit, Ending::Open(_) | Ending::Superseded) => {
                malformed(MalformedReason::Empty)
            }
            _ => as_text(),
        };
    }
    let (outcomes, leftover) = match read_body(block, tools, intent, text_calls) {
        Ok(read) => read,
        Err(detail) => {
            return match intent {
                Intent::Explicit => malformed(MalformedReason::InvalidJson { detail }),
                Intent::Candidate => as_text(),
            };
        }
    };
    if outcomes.iter().all(|o| matches!(o, Outcome::NotACall)) {
        return as_text();
    }
    let mut events = Vec::new();
    let keep_leftover = !leftover.trim().is_empty() && matches!(block.ending, Ending::Open(_));
    for outcome in outcomes {
        match outcome {
            Outcome::Calls(calls) => {
                for mut call in calls {
                    if !leftover.trim().is_empty() && !keep_leftover {
                        call.repairs.push(Repair::TrailingText);
                    }
                    events.push(ParseEvent::ToolCall(call));
                }
            }
            Outcome::Failed(reason) => events.extend(malformed(reason)),
            Outcome::NotACall => {}
        }
    }
    if keep_leftover {
        // Prose after a call whose close tag never came is the model talking again.
        events.push(ParseEvent::Text(leftover.to_string()));
    }
    events
}

/// Reads the body as XML or as a JSON value sequence; returns the outcomes and any text after.
fn read_body<'a>(
    block: &Finished<'a>,
    tools: &[ToolSpec],
    intent: Intent,
    text_calls: TextCalls,
) -> Result<(Vec<Outcome>, &'a str), String> {
    let mut base = Vec::new();
    match (block.kind, block.ending) {
        (BlockKind::Alt | BlockKind::BareJson, _) => base.push(Repair::Wrapper),
        (BlockKind::Fence, _) => base.push(Repair::CodeFence),
        (_, Ending::Open(_) | Ending::Superseded) => base.push(Repair::MissingCloseTag),
        _ => {}
    }
    // A JSON body may mention `<function=` inside a string; only a body that does not start
    // like JSON is read as XML.
    let json_like = block.body.trim_start().starts_with(['{', '[', '`']);
    let closes = if block.ending == Ending::Closed { 8 } else { 1 };
    if let Some(tagged) = function_tags::tagged_call(block.body) {
        base.push(Repair::Wrapper);
        let v = parse_values(tagged.arguments, closes)?;
        base.extend(v.repairs);
        let arguments = v.values.into_iter().next().unwrap_or(Value::Null);
        let call = function_tags::as_hermes(tagged.name, arguments);
        let leftover = if v.leftover.trim().is_empty() {
            tagged.leftover
        } else {
            v.leftover
        };
        return Ok((
            vec![to_calls(call, tools, intent, text_calls, &base)],
            leftover,
        ));
    }
    if !json_like && block.body.contains("<function=") {
        // Several functions in one block are several calls.
        let mut outcomes = Vec::new();
        let mut rest = block.body;
        loop {
            let (outcome, leftover) = xml::parse(rest, tools);
            outcomes.push(with_base(outcome, &base));
            rest = leftover;
            if !leftover.trim_start().starts_with("<function=") {
                break;
            }
        }
        return Ok((outcomes, rest));
    }
    let v = parse_values(block.body, closes)?;
    base.extend(v.repairs);
    let outs = v
        .values
        .into_iter()
        .map(|value| to_calls(value, tools, intent, text_calls, &base))
        .collect();
    Ok((outs, v.leftover))
}

fn with_base(outcome: Outcome, base: &[Repair]) -> Outcome {
    match outcome {
        Outcome::Calls(mut calls) => {
            for call in &mut calls {
                let mut repairs = base.to_vec();
                repairs.append(&mut call.repairs);
                call.repairs = repairs;
            }
            Outcome::Calls(calls)
        }
        other => other,
    }
}

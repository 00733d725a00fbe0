//! Shared test helpers: the declared tools of the table tests, and the one runner that feeds a
//! case whole, in 1-character chunks and split at every position, asserting identical events.

use hearth_backend::ToolSpec;
use serde_json::{Value, json};

use super::{ParseEvent, ParserConfig, StreamEnd, StreamParser, ThinkStart, ToolFormat};
use E::*;

pub(crate) fn tool(name: &str, properties: Value, required: &[&str]) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("The {name} tool."),
        parameters: json!({"type": "object", "properties": properties, "required": required}),
    }
}

/// A coding agent's usual tools.
pub(crate) fn tools() -> Vec<ToolSpec> {
    vec![
        tool(
            "read_file",
            json!({"path": {"type": "string", "description": "File path"}}),
            &["path"],
        ),
        tool(
            "write_file",
            json!({"path": {"type": "string"}, "content": {"type": "string"}}),
            &["path", "content"],
        ),
        tool(
            "run",
            json!({"command": {"type": "string"}, "timeout": {"type": "integer"},
                   "background": {"type": "boolean"}, "env": {"type": "object"},
                   "cwd": {"type": ["string", "null"]}}),
            &["command"],
        ),
        tool("list_dir", json!({}), &[]),
    ]
}

pub(crate) fn config(format: ToolFormat, think: ThinkStart) -> ParserConfig {
    ParserConfig {
        format,
        tools: tools(),
        think,
        text_calls: Default::default(),
    }
}

/// Joins adjacent text and adjacent reasoning events (chunking decides where they split).
pub(crate) fn merged(events: Vec<ParseEvent>) -> Vec<ParseEvent> {
    let mut out: Vec<ParseEvent> = Vec::new();
    for e in events {
        match (out.last_mut(), e) {
            (Some(ParseEvent::Text(a)), ParseEvent::Text(b)) => a.push_str(&b),
            (Some(ParseEvent::Reasoning(a)), ParseEvent::Reasoning(b)) => a.push_str(&b),
            (_, e) => out.push(e),
        }
    }
    out
}

/// Feeds `chunks` then finishes; checks that finish is idempotent and later feeds inert, and
/// that every input byte is text, reasoning or consumed markup.
pub(crate) fn run_chunks(cfg: &ParserConfig, chunks: &[&str], end: StreamEnd) -> Vec<ParseEvent> {
    let mut p = StreamParser::new(cfg.clone());
    let mut events = Vec::new();
    for c in chunks {
        events.extend(p.feed(c));
    }
    events.extend(p.finish(end));
    assert!(p.finish(end).is_empty(), "finish is not idempotent");
    assert!(
        p.feed("<tool_call>{}</tool_call> more").is_empty(),
        "feed after finish"
    );
    let input: usize = chunks.iter().map(|c| c.len()).sum();
    let shown: usize = events
        .iter()
        .map(|e| match e {
            ParseEvent::Text(t) | ParseEvent::Reasoning(t) => t.len(),
            _ => 0,
        })
        .sum();
    assert_eq!(
        shown + p.consumed_bytes(),
        input,
        "bytes lost or duplicated: {events:?}"
    );
    merged(events)
}

/// Runs `input` whole, in 1-character chunks and split at every char boundary; asserts all give
/// the same events and returns them.
pub(crate) fn split_invariant(cfg: &ParserConfig, input: &str, end: StreamEnd) -> Vec<ParseEvent> {
    let whole = run_chunks(cfg, &[input], end);
    let mut chars = Vec::new();
    let mut buf = [0u8; 4];
    for ch in input.chars() {
        chars.push(ch.encode_utf8(&mut buf).to_string());
    }
    let singles: Vec<&str> = chars.iter().map(String::as_str).collect();
    assert_eq!(
        run_chunks(cfg, &singles, end),
        whole,
        "1-char chunks differ for {input:?}"
    );
    for (at, _) in input.char_indices().skip(1) {
        let (a, b) = input.split_at(at);
        assert_eq!(
            run_chunks(cfg, &[a, b], end),
            whole,
            "split at {at} differs for {input:?}"
        );
    }
    whole
}

/// What a table case expects, event by event.
#[derive(Debug)]
pub(crate) enum E {
    T(&'static str),
    R(&'static str),
    C(&'static str, Value),
    /// A Malformed whose message contains this.
    Bad(&'static str),
    Cut,
}

pub(crate) struct Case {
    pub name: &'static str,
    pub think: ThinkStart,
    pub format: ToolFormat,
    pub end: StreamEnd,
    pub input: &'static str,
    pub want: Vec<E>,
}

pub(crate) fn case(name: &'static str, input: &'static str, want: Vec<E>) -> Case {
    Case {
        name,
        think: ThinkStart::Closed,
        format: ToolFormat::Auto,
        end: StreamEnd::Stop,
        input,
        want,
    }
}

pub(crate) fn check(c: &Case) -> Vec<ParseEvent> {
    let got = split_invariant(&config(c.format, c.think), c.input, c.end);
    let ok = got.len() == c.want.len()
        && got.iter().zip(&c.want).all(|(g, w)| match (g, w) {
            (ParseEvent::Text(a), T(b)) | (ParseEvent::Reasoning(a), R(b)) => a == b,
            (ParseEvent::ToolCall(call), C(name, args)) => {
                call.name == *name && &call.arguments == args
            }
            (ParseEvent::Malformed(m), Bad(s)) => m.to_string().contains(s),
            (ParseEvent::ReasoningCut, Cut) => true,
            _ => false,
        });
    assert!(ok, "case {}:\n got  {got:#?}\n want {:#?}", c.name, c.want);
    got
}

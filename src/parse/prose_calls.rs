//! Calls written into prose: "To see it, use read_file as follows:" and then the call as a
//! JSON object on its own line (often fenced). A small model means it; running it beats showing
//! it. Only an object with exactly a call's keys counts, and only in a message that made no
//! other call; one naming no declared tool is an invented tool, answered with the real ones.
//! So is the labelled form, `write_file: {"path": …}`: a line that is a name, a colon and the
//! arguments (the 0.5B's whole answer to "write fizzbuzz in rust", once).

use hearth_backend::ToolSpec;
use serde_json::Value;

use super::config::TextCalls;
use super::event::{Malformed, MalformedReason, ParseEvent, Repair};
use super::normalize::{CALL_KEYS, Intent, Outcome, find_tool, to_calls, unknown};
use super::repair::parse_values;

/// Calls read from one message's prose at most.
const MAX_CALLS: usize = 8;
/// Line-opening objects tried at most: each try reads on to the end of the text, so a hostile
/// reply of many `{` lines must not cost quadratic time.
const MAX_TRIES: usize = 32;
/// Visible text kept for the scan; a call is written near a message's start, not after this.
pub(crate) const MAX_SCANNED_BYTES: usize = 64 * 1024;

/// The calls a message's visible text holds, as events to append after it.
pub(crate) fn calls_in_prose(text: &str, tools: &[ToolSpec]) -> Vec<ParseEvent> {
    let mut events = Vec::new();
    let mut at = 0;
    let mut tries = 0;
    while events.len() < MAX_CALLS && tries < MAX_TRIES {
        tries += 1;
        let Some(start) = next_line_object(text, at) else {
            break;
        };
        let Ok(read) = parse_values(&text[start..], 1) else {
            // Not JSON even leniently (code pasted into a string, unescaped): if it opens
            // exactly like a call, it was one, and the model hears what is wrong with it.
            if let Some(name) = call_opening(&text[start..]) {
                let raw = text[start..].lines().next().unwrap_or("").to_string();
                let reason = if find_tool(tools, name).is_some() {
                    MalformedReason::InvalidJson {
                        detail: "the arguments are not valid JSON".into(),
                    }
                } else {
                    unknown(name, tools)
                };
                events.push(ParseEvent::Malformed(Malformed { raw, reason }));
                break;
            }
            at = start + 1;
            continue;
        };
        let end = read.end_in(text);
        at = end.max(start + 1);
        let raw = &text[start..end];
        for value in read.values {
            if !call_shaped(&value) {
                continue;
            }
            match to_calls(
                value,
                tools,
                Intent::Explicit,
                TextCalls::Take,
                &[Repair::Wrapper],
            ) {
                Outcome::Calls(calls) => {
                    events.extend(calls.into_iter().map(ParseEvent::ToolCall));
                }
                Outcome::Failed(reason) => events.push(ParseEvent::Malformed(Malformed {
                    raw: raw.to_string(),
                    reason,
                })),
                Outcome::NotACall => {}
            }
        }
    }
    if events.is_empty() {
        events.extend(labelled_call(text, tools));
    }
    events
}

/// A line `name: {…}` whose object is the arguments. A declared name (case aside) is that call;
/// another counts only when the line is all the message says, fences aside, and the name looks
/// like a tool's (it has an underscore), as `key: {…}` also labels data in YAML and prose.
fn labelled_call(text: &str, tools: &[ToolSpec]) -> Option<ParseEvent> {
    let mut offset = 0;
    for line in text.split_inclusive('\n').take(MAX_TRIES * 4) {
        let start = offset + (line.len() - line.trim_start().len());
        offset += line.len();
        let Some((name, rest)) = line.trim().split_once(':') else {
            continue;
        };
        let is_name = !name.is_empty()
            && name.len() <= 64
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !is_name || !rest.trim_start().starts_with('{') {
            continue;
        }
        let object = &text[start..][name.len() + 1..];
        let Ok(read) = parse_values(object.trim_start(), 1) else {
            continue;
        };
        let [args @ Value::Object(_)] = &read.values[..] else {
            continue;
        };
        let end = read.end_in(text);
        let declared = find_tool(tools, name).is_some();
        if !declared {
            let around = format!("{}{}", &text[..start], &text[end..]);
            let alone = around
                .lines()
                .all(|l| l.trim().is_empty() || l.trim().starts_with("```"));
            if !(alone && name.contains('_')) {
                continue;
            }
            return Some(ParseEvent::Malformed(Malformed {
                raw: text[start..end].to_string(),
                reason: unknown(name, tools),
            }));
        }
        let call = serde_json::json!({"name": name, "arguments": args});
        return match to_calls(
            call,
            tools,
            Intent::Explicit,
            TextCalls::Take,
            &[Repair::Wrapper],
        ) {
            Outcome::Calls(calls) => calls.into_iter().next().map(ParseEvent::ToolCall),
            Outcome::Failed(reason) => Some(ParseEvent::Malformed(Malformed {
                raw: text[start..end].to_string(),
                reason,
            })),
            Outcome::NotACall => None,
        };
    }
    None
}

/// The next `{` from `at` that opens a line (after indentation).
fn next_line_object(text: &str, mut at: usize) -> Option<usize> {
    while at < text.len() {
        let found = at + text[at..].find('{')?;
        let line_start = text[..found].rfind('\n').map_or(0, |n| n + 1);
        if text[line_start..found].trim().is_empty() {
            return Some(found);
        }
        at = found + 1;
    }
    None
}

/// The tool name of text that opens exactly like a call: `{"name": "…", "arguments":`.
fn call_opening(text: &str) -> Option<&str> {
    let rest = text.strip_prefix('{')?.trim_start();
    let rest = rest
        .strip_prefix("\"name\"")?
        .trim_start()
        .strip_prefix(':')?
        .trim_start();
    let rest = rest.strip_prefix('"')?;
    let (name, rest) = rest.split_once('"')?;
    let rest = rest.trim_start().strip_prefix(',')?.trim_start();
    let opens = rest.starts_with("\"arguments\"") || rest.starts_with("\"parameters\"");
    (opens && !name.is_empty() && !name.contains('\\')).then_some(name)
}

/// `{"name": "…", "arguments": {…}}` and nothing else (`parameters`, `type`, `id` allowed).
fn call_shaped(value: &Value) -> bool {
    let Value::Object(obj) = value else {
        return false;
    };
    let named = obj.get("name").is_some_and(Value::is_string);
    let has_args = obj.contains_key("arguments") || obj.contains_key("parameters");
    named && has_args && obj.keys().all(|k| CALL_KEYS.contains(&k.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::test_support::tools;

    #[test]
    fn a_call_on_its_own_line_after_prose_is_read_and_examples_of_other_shapes_are_not() {
        let text = "To read it, use read_file as follows:\n\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n```\nThis prints it.";
        let events = calls_in_prose(text, &tools());
        assert!(
            matches!(&events[..], [ParseEvent::ToolCall(c)] if c.name == "read_file"),
            "{events:?}"
        );
        let inline =
            "Call it like {\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}} inline.";
        assert!(calls_in_prose(inline, &tools()).is_empty());
        let invented = "Use this:\n```json\n{\"name\": \"summon\", \"arguments\": {}}\n```";
        assert!(matches!(
            &calls_in_prose(invented, &tools())[..],
            [ParseEvent::Malformed(m)] if m.to_string().contains("unknown tool `summon`")
        ));
        let data = "The record:\n{\"name\": \"read_file\", \"arguments\": {}, \"owner\": \"me\"}";
        assert!(calls_in_prose(data, &tools()).is_empty());
        let broken = "Here:\n```json\n{\n  \"name\": \"write_fizzbuzz\",\n  \"arguments\": {\"code\": \"fn main() { println!(\"x\") }\"\n}}\n```";
        assert!(matches!(
            &calls_in_prose(broken, &tools())[..],
            [ParseEvent::Malformed(m)] if m.to_string().contains("unknown tool `write_fizzbuzz`")
        ));
        let flood =
            "{\n".repeat(10_000) + "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}";
        assert!(
            calls_in_prose(&flood, &tools()).is_empty(),
            "gives up after its tries"
        );
        // Prose after the object, then whitespace the reader trims: the object's end is where
        // the prose starts, not the prose's length back from the end (inside the crab, once).
        let trailing = "<function=nope>\n{}🦀\n";
        assert!(calls_in_prose(trailing, &tools()).is_empty());
        let bad = "Now:\n{\"name\": \"read_file\", \"arguments\": {\"nope\": 1}}";
        assert!(matches!(
            &calls_in_prose(bad, &tools())[..],
            [ParseEvent::Malformed(_)]
        ));
    }

    /// `name: {…}` on a line: a declared tool's is its call; an undeclared name is an invented
    /// tool only when the line is the whole answer; data labelled the same way is left alone.
    #[test]
    fn a_call_labelled_with_its_name_is_read_and_labelled_data_is_not() {
        let fenced = "```json\nread_file: {\"path\": \"a.txt\"}\n```";
        assert!(
            matches!(&calls_in_prose(fenced, &tools())[..], [ParseEvent::ToolCall(c)]
                if c.name == "read_file" && c.arguments["path"] == "a.txt"),
            "{:?}",
            calls_in_prose(fenced, &tools())
        );
        let invented =
            "```json\nwrite_fizzbuzz: {\"path\": \"f.txt\", \"content\": \"buzz\\n\"}\n```\n";
        let got = calls_in_prose(invented, &tools());
        assert!(
            matches!(&got[..], [ParseEvent::Malformed(m)]
                if m.to_string().contains("unknown tool `write_fizzbuzz`")),
            "{got:?}"
        );
        for data in [
            "The service is configured as:\nredis_cache: {\"port\": 6379}\nand restarts on failure.",
            "```yaml\nservices: {\"web\": 1}\n```",
            "Note: {\"a\": 1} is an object.",
            "```\nread_file: {not json at all\n```",
        ] {
            assert!(calls_in_prose(data, &tools()).is_empty(), "{data}");
        }
        // A hostile flood of labelled lines that never close is given up on, not read to the end
        // once per line.
        let flood = "a_b: {\"x\": [\n".repeat(20_000);
        assert!(calls_in_prose(&flood, &tools()).is_empty());
        let bad_args = "read_file: {\"nope\": 1}";
        assert!(matches!(
            &calls_in_prose(bad_args, &tools())[..],
            [ParseEvent::Malformed(_)]
        ));
    }
}

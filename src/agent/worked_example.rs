//! A short worked example for small models (the worked_example assist): one code answer and two
//! tasks done with a call, each answered from its result. Qwen2.5-Coder 0.5B given only the
//! tool list reads or lists files where the task asks it to write one, and answers a command's
//! result by repeating the command.

use std::borrow::Cow;

use hearth_conversation::ToolCallRecord;
use serde_json::Value;

use crate::config::{Assist, Assists};
use crate::parse::{ResolvedFormat, SESSION_PART};
use crate::tools::COMPACT_WINDOW;

const WORKED_EXAMPLE: &str = include_str!("../../prompts/worked_example.md");

/// What a call copied from the example is answered. It starts like a repeat's answer: the
/// answer digest leaves out every call that was not run.
pub const EXAMPLE_COPY_ANSWER: &str = "Not run: this call is the example from the \
instructions, not a step of the user's request. Make the call that the request needs, or \
answer the user in plain text.";

/// Whether the example goes with the system prompt: for the in-band Hermes format (the example
/// is written in it) and a window small enough to suggest a small model.
pub fn shows_worked_example(format: ResolvedFormat, window_tokens: u32, assists: &Assists) -> bool {
    assists.on(Assist::WorkedExample)
        && format == ResolvedFormat::Hermes
        && window_tokens <= COMPACT_WINDOW
}

/// `system` with the example after the tool block, where [`shows_worked_example`] says so.
pub fn with_worked_example<'a>(
    system: &'a str,
    format: ResolvedFormat,
    window_tokens: u32,
    assists: &Assists,
) -> Cow<'a, str> {
    if !shows_worked_example(format, window_tokens, assists) {
        return Cow::Borrowed(system);
    }
    let example = WORKED_EXAMPLE.trim_end();
    Cow::Owned(match system.split_once(SESSION_PART) {
        Some((shared, own)) => format!("{shared}{SESSION_PART}{example}\n\n{own}"),
        None => format!("{system}{SESSION_PART}{example}"),
    })
}

/// Whether `call` is one of the example's own calls, as written there, while the request
/// (`task`) names none of its values: the model copied the example instead of doing the task.
/// The 0.5B does, and the example's write would put `notes.txt` in the user's project.
pub fn copies_the_example(call: &ToolCallRecord, task: &str) -> bool {
    example_calls().any(|(name, arguments)| {
        name == call.name
            && arguments == call.arguments
            && !string_values(&arguments).any(|value| task.contains(value.trim()))
    })
}

/// The calls the example shows: each line's JSON object from its first brace.
fn example_calls() -> impl Iterator<Item = (String, Value)> {
    WORKED_EXAMPLE.lines().filter_map(|line| {
        let call: Value = serde_json::from_str(&line[line.find('{')?..]).ok()?;
        let name = call.get("name")?.as_str()?.to_string();
        Some((name, call.get("arguments")?.clone()))
    })
}

fn string_values(arguments: &Value) -> impl Iterator<Item = &str> {
    arguments
        .as_object()
        .into_iter()
        .flat_map(|map| map.values())
        .filter_map(Value::as_str)
        .filter(|value| !value.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_conversation::ToolCallId;
    use serde_json::json;

    fn call(name: &str, arguments: Value) -> ToolCallRecord {
        ToolCallRecord {
            id: ToolCallId::generate(),
            name: name.into(),
            arguments,
        }
    }

    #[test]
    fn a_call_copied_from_the_example_is_known_unless_the_request_names_its_values() {
        assert_eq!(example_calls().count(), 3, "the example's calls all parse");
        let notes = call(
            "write_file",
            json!({"path": "notes.txt", "content": "hi\n"}),
        );
        assert!(copies_the_example(&notes, "write fizzbuzz in rust"));
        assert!(!copies_the_example(&notes, "put hi in notes.txt"));
        let readme = call("read_file", json!({"path": "README.md"}));
        assert!(copies_the_example(&readme, "what does main.py do?"));
        assert!(!copies_the_example(&readme, "Summarise README.md"));
        let other = call(
            "write_file",
            json!({"path": "notes.txt", "content": "fizz\n"}),
        );
        assert!(!copies_the_example(&other, "write fizzbuzz"));
        let renamed = call("bash", json!({"path": "notes.txt", "content": "hi\n"}));
        assert!(!copies_the_example(&renamed, "write fizzbuzz"));
        assert!(EXAMPLE_COPY_ANSWER.starts_with("Not run"));
    }

    #[test]
    fn the_example_follows_the_tool_block_for_hermes_in_a_small_window_only() {
        let system = format!("Be brief.{SESSION_PART}The project is at /p.");
        let on = Assists::default();
        let small = 32 * 1024;
        let held = with_worked_example(&system, ResolvedFormat::Hermes, small, &on);
        let (shared, own) = held.split_once(SESSION_PART).unwrap();
        assert_eq!(shared, "Be brief.");
        assert!(
            own.starts_with("# How to use the tools") && own.ends_with("The project is at /p.")
        );
        assert!(own.contains("\"name\": \"write_file\""));

        let large = 128 * 1024;
        let off = Assists::without([Assist::WorkedExample]);
        for (format, context, assists) in [
            (ResolvedFormat::Native, small, &on),
            (ResolvedFormat::Hermes, large, &on),
            (ResolvedFormat::Hermes, small, &off),
        ] {
            let prompt = with_worked_example(&system, format, context, assists);
            assert_eq!(prompt, system, "{format:?}");
        }
    }
}

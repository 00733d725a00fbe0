use hearth_conversation::ToolCallId;
use serde_json::json;

use super::*;
use crate::agent::loop_guard::REPEAT_NUDGE;
use crate::parse::SESSION_PART;

/// One token per character.
struct Chars;

impl TokenCounter for Chars {
    fn count(&self, text: &str) -> usize {
        text.chars().count()
    }
}

fn call(name: &str, arguments: Value) -> ToolCallRecord {
    ToolCallRecord {
        id: ToolCallId::generate(),
        name: name.into(),
        arguments,
    }
}

fn result(call: &ToolCallRecord, output: &str, is_error: bool) -> HistoryEntry {
    HistoryEntry::ToolResult {
        call_id: call.id.clone(),
        name: call.name.clone(),
        output: output.into(),
        is_error,
    }
}

fn calls(text: &str, calls: &[&ToolCallRecord]) -> HistoryEntry {
    HistoryEntry::Assistant {
        text: text.into(),
        reasoning: None,
        tool_calls: calls.iter().map(|c| (*c).clone()).collect(),
    }
}

/// A turn that read a file, ran a failing command, repeated the read and wrote a broken call.
fn a_turn() -> Vec<HistoryEntry> {
    let read = call("read_file", json!({"path": "greet.py"}));
    let run = call("bash", json!({"command": "python3 -m unittest"}));
    let again = call("read_file", json!({"path": "greet.py"}));
    let broken = call("invalid_tool_call", Value::String("{\"name\": ".into()));
    vec![
        HistoryEntry::User {
            content: vec![
                ContentPart::text("<context listing=\"project files\">\ngreet.py\n</context>\n\n"),
                ContentPart::text("<context file=\"greet.py\">\ndef greet(): ...\n</context>\n\n"),
                ContentPart::text("What does greet.py print, and do the tests pass?"),
            ],
        },
        calls("", &[&read, &run]),
        result(&read, "print(\"Howdy\")", false),
        result(&run, "exit code: 1\noutput:\nFAILED (failures=1)", true),
        calls("Let me look again.", &[&again, &broken]),
        result(&again, REPEAT_NUDGE, true),
        result(&broken, "That call was not valid JSON.", true),
    ]
}

fn user_text(parts: &[ContentPart]) -> String {
    parts
        .iter()
        .filter_map(|p| match p {
            ContentPart::Text { text } => Some(text.as_str()),
            ContentPart::Image { .. } => None,
        })
        .collect()
}

#[test]
fn the_digest_puts_each_result_that_ran_before_the_prompts_words_once() {
    let system = format!("Use the tools well.{SESSION_PART}The project is at /p.");
    let (system, user) = digest(&system, &a_turn(), &Chars, 100_000).unwrap();
    assert!(system.starts_with("You are hearth") && system.ends_with("The project is at /p."));
    assert!(!system.contains("Use the tools well"), "{system}");
    let expected = "<context file=\"greet.py\">\ndef greet(): ...\n</context>\n\n\
        <context path=\"greet.py\">\nprint(\"Howdy\")\n</context>\n\n\
        <context command=\"python3 -m unittest\">\nexit code: 1\noutput:\nFAILED (failures=1)\n</context>\n\n\
        What does greet.py print, and do the tests pass?";
    // The project's layout is left out: it answers nothing, and the 0.5B echoed it.
    assert_eq!(user_text(&user), expected);
    assert_eq!(
        user.len(),
        3,
        "the prompt's parts stay whole around the results"
    );
}

#[test]
fn a_turn_with_no_call_that_ran_is_asked_as_its_prompt_alone() {
    let turn = vec![HistoryEntry::User {
        content: vec![ContentPart::text("write fizzbuzz in rust")],
    }];
    let (_, user) = digest("", &turn, &Chars, 10_000).unwrap();
    assert_eq!(user_text(&user), "write fizzbuzz in rust");
    assert!(
        digest("", &a_turn()[1..], &Chars, 10_000).is_none(),
        "no prompt"
    );
}

#[test]
fn the_oldest_results_are_left_out_first_and_a_prompt_too_long_gives_up() {
    let mut turn = a_turn();
    let big = call("read_file", json!({"path": "big.txt"}));
    turn.push(calls("", &[&big]));
    turn.push(result(&big, &"x".repeat(5000), false));
    let whole = {
        let (system, user) = digest("", &turn, &Chars, 1_000_000).unwrap();
        Chars.count(&system) + Chars.count(&user_text(&user)) + 2 * MESSAGE_OVERHEAD
    };
    let (_, user) = digest("", &turn, &Chars, whole - 10).unwrap();
    let text = user_text(&user);
    assert!(
        text.contains("earlier tool results are left out for room.)\n\n<context "),
        "{text}"
    );
    assert!(!text.contains("Howdy"), "the oldest goes first: {text}");
    assert!(text.contains("<context path=\"big.txt\">"));
    // Results longer than the quote are cut.
    let long = call("read_file", json!({"path": "long.txt"}));
    turn.push(calls("", &[&long]));
    turn.push(result(&long, &"y".repeat(RESULT_CHARS + 10), false));
    let (_, user) = digest("", &turn, &Chars, 1_000_000).unwrap();
    let text = user_text(&user);
    assert!(text.contains(&format!("{}\n…(cut)\n</context>", "y".repeat(RESULT_CHARS))));
    assert!(digest("", &turn, &Chars, 60).is_none());
}

#[test]
fn arguments_become_one_line_attributes_with_long_values_cut() {
    let content = format!("say \"hi\"\n{}", "z".repeat(ARGUMENT_CHARS));
    let shown = attributes(&json!({"path": "a.py", "content": content, "n": [1, "q"]}));
    let kept: String = format!("say 'hi' {}", "z".repeat(ARGUMENT_CHARS))
        .chars()
        .take(ARGUMENT_CHARS)
        .collect();
    assert_eq!(
        shown,
        format!(" path=\"a.py\" content=\"{kept}…\" n=\"[1,'q']\"")
    );
    assert_eq!(attributes(&json!("not an object")), "");
}

//! The malformation classes of the second robustness pass (issue #18), one test per class,
//! each case run whole, in 1-character chunks and split at every position.

use serde_json::json;

use super::super::test_support::E::*;
use super::super::test_support::{Case, case, check};
use super::super::{ParseEvent, StreamEnd, ThinkStart};

fn open_think(mut c: Case) -> Case {
    c.think = ThinkStart::Open;
    c
}

fn read(path: &str) -> super::super::test_support::E {
    C("read_file", json!({ "path": path }))
}

#[test]
fn class_1_an_unknown_tool_in_call_shape_is_reported_never_shown_or_guessed() {
    for input in [
        r#"{"name": "write_fizzbuzz", "arguments": {"n": 15}}"#,
        "```json\n{\"name\": \"is_prime\", \"arguments\": {\"n\": 7}}\n```",
        "```\n  {\"name\": \"add_tests\", \"arguments\": {}}\n```",
    ] {
        let got = check(&case("unknown", input, vec![Bad("unknown tool")]));
        let ParseEvent::Malformed(m) = &got[0] else {
            unreachable!()
        };
        assert!(m.to_string().contains("read_file"), "the real list: {m}");
    }
}

#[test]
fn class_2_fences_and_wrappers_around_calls_leave_no_residue() {
    let call = r#"{"name": "read_file", "arguments": {"path": "a.txt"}}"#;
    for (name, input) in [
        (
            "fence xml",
            format!("```xml\n<tool_call>\n{call}\n</tool_call>\n```"),
        ),
        (
            "fence json",
            format!("```json\n<tool_call>{call}</tool_call>\n```"),
        ),
        (
            "response",
            format!("<response>\n  <tool_call>\n{call}\n</tool_call>\n</response>"),
        ),
        (
            "function_call",
            format!("<function_call>{call}</function_call>"),
        ),
        ("tool", format!("<tool>\n    {call}\n</tool>")),
        ("tools", format!("<tools>\n{call}\n</tools>")),
        ("json", format!("<json>{call}</json>")),
        ("JSON", format!("<JSON>{call}</JSON>")),
        ("xml", format!("<xml>\n{call}\n</xml>")),
        (
            "fence in call",
            format!("<tool_call>\n```json\n{call}\n```\n</tool_call>"),
        ),
        ("indented fence", format!("```\n        {call}\n```")),
    ] {
        let input: &'static str = Box::leak(input.into_boxed_str());
        check(&case(name, input, vec![read("a.txt")]));
    }
    // Prose around a fenced pair of calls: the fence goes, the prose stays.
    let input = "Reading both.\n```json\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"b\"}}\n</tool_call>\n```\nDone.";
    check(&case(
        "two in a fence",
        input,
        vec![T("Reading both.\n"), read("a"), read("b"), T("\nDone.")],
    ));
    // A fence of ordinary code stays text.
    let code = "```xml\n<tools><tool>x</tool></tools>\n```";
    check(&case("code", code, vec![T(code)]));
}

#[test]
fn class_3_function_tag_variants() {
    for (name, input) in [
        (
            "attribute",
            r#"<function name="read_file">{"path": "a.txt"}</function>"#,
        ),
        (
            "attribute single",
            "<function name='read_file'>\n{\"path\": \"a.txt\"}\n</function>",
        ),
        (
            "attribute in call",
            "<tool_call>\n<function name=\"read_file\">{\"path\": \"a.txt\"}</function>\n</tool_call>",
        ),
        (
            "name as text",
            "<tool_call><function>read_file</function>{\"path\": \"a.txt\"}</tool_call>",
        ),
        (
            "name as text, lines",
            "<tool_call>\n<function>read_file</function>\n{\"path\": \"a.txt\"}\n</tool_call>",
        ),
    ] {
        check(&case(name, input, vec![read("a.txt")]));
    }
    let unknown = "<tool_call><function>fizz</function>{}</tool_call>";
    check(&case("unknown", unknown, vec![Bad("unknown tool `fizz`")]));
    // An HTML-ish tag naming no tool is prose.
    let prose = r#"Use <function name="main"> in the template."#;
    check(&case("prose", prose, vec![T(prose)]));
}

#[test]
fn class_4_unclosed_values_on_the_tag_line_are_trimmed() {
    check(&case(
        "one value",
        "<tool_call>\n<function=read_file>\n<parameter=path> a.txt  ",
        vec![read("a.txt")],
    ));
    check(&case(
        "values end at the next parameter",
        "<function=run>\n<parameter=command> ls -la \n<parameter=timeout> 5\n</function>",
        vec![C("run", json!({"command": "ls -la", "timeout": 5}))],
    ));
    // Pretty-printed: the closer indented on its own line.
    check(&case(
        "indented",
        "<tool_call>\n  <function=read_file>\n    <parameter=path>\n      a.txt\n    </parameter>\n  </function>\n</tool_call>",
        vec![read("a.txt")],
    ));
    // A value begun on the next line keeps its indentation (code); a closed one is as written.
    check(&case(
        "next line",
        "<function=write_file>\n<parameter=path>a.py</parameter>\n<parameter=content>\n    x = 1\n",
        vec![C(
            "write_file",
            json!({"path": "a.py", "content": "    x = 1"}),
        )],
    ));
}

#[test]
fn class_5_python_literals_become_booleans_and_null_where_the_schema_allows() {
    let input = "<tool_call>\n<function=run>\n<parameter=command>\nls\n</parameter>\n<parameter=background>\nTRUE\n</parameter>\n<parameter=cwd>\nNone\n</parameter>\n</function>\n</tool_call>";
    check(&case(
        "literals",
        input,
        vec![C(
            "run",
            json!({"command": "ls", "background": true, "cwd": null}),
        )],
    ));
    // A plain string parameter keeps the word.
    let input = "<function=run>\n<parameter=command>\nNone\n</parameter>\n</function>";
    check(&case(
        "string",
        input,
        vec![C("run", json!({"command": "None"}))],
    ));
}

#[test]
fn class_6_tags_named_in_prose_are_words() {
    for input in [
        "The model writes <tool_call></tool_call> when it calls.",
        "Wrap calls in `<tool_call>` tags, like `<tool_call>{\"name\": \"x\"}</tool_call>`.",
        "Use ``<tool_call>`` and `</tool_call>`; `<function=read_file>` is XML.",
    ] {
        check(&case("prose", input, vec![T(input)]));
    }
    // A code span that never closes ends with its line: a call on the next line is a call.
    let input = "It says `oops\n<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}</tool_call>";
    check(&case(
        "span to eol",
        input,
        vec![T("It says `oops\n"), read("a")],
    ));
}

#[test]
fn class_7_reasoning_boundaries() {
    // The prompt ended inside <think>; a call with no </think> ends the reasoning and runs.
    let input = "I should read it.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>\n";
    check(&open_think(case(
        "call ends reasoning",
        input,
        vec![R("I should read it."), read("a")],
    )));
    // Thought on after the call, then closed: all of it was thought.
    let input = "Maybe <tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}</tool_call> no.\n</think>\n\nNo.";
    check(&open_think(case(
        "thought about",
        input,
        vec![
            R(
                "Maybe <tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}</tool_call> no.",
            ),
            T("No."),
        ],
    )));
    // Garbage in call tags inside unterminated reasoning is reasoning; nothing is reported.
    let input = "Thinking <tool_call>garbage here</tool_call> more";
    check(&open_think(case("garbage", input, vec![R(input)])));
    let input = "Thinking <tool_call>{\"name\": \"nope\"}</tool_call>";
    check(&open_think(case(
        "unknown in thought",
        input,
        vec![R(input)],
    )));
    // A bare </think> ends reasoning the prompt opened, whitespace trimmed on both sides.
    let input = "\nThe user wants a file.\n</think>\n\nHere it is.";
    check(&open_think(case(
        "bare close",
        input,
        vec![R("The user wants a file."), T("Here it is.")],
    )));
    // Cut by the token limit: the held call was thought, and is shown as such.
    let input = "Read it.\n<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}</tool_call>";
    let mut c = open_think(case("cut", input, vec![R(input), Cut]));
    c.end = StreamEnd::Length;
    check(&c);
}

#[test]
fn several_functions_in_one_call_block_are_several_calls() {
    let input = "<tool_call>\n<function=run>\n<parameter=command>\nls\n</parameter>\n</function>\n<function=read_file>\n<parameter=path>\na\n</parameter>\n</function>\n</tool_call>";
    check(&case(
        "two functions",
        input,
        vec![C("run", json!({"command": "ls"})), read("a")],
    ));
}

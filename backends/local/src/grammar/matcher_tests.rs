use hearth_backend::ToolSpec;
use serde_json::{Value, json};

use super::*;
use crate::grammar::CLOSE_TAG;

fn tool(name: &str, parameters: Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: String::new(),
        parameters,
    }
}

fn tools() -> Vec<ToolSpec> {
    vec![
        tool(
            "read_file",
            json!({"type": "object", "properties": {
                "path": {"type": "string"},
                "offset": {"type": "integer", "minimum": 1},
                "limit": {"type": "integer"}
            }, "required": ["path"]}),
        ),
        tool(
            "edit_file",
            json!({"type": "object", "properties": {
                "path": {"type": "string"},
                "edits": {"type": "array", "items": {"type": "object", "properties": {
                    "old_text": {"type": "string"},
                    "new_text": {"type": "string"},
                    "replace_all": {"type": "boolean"}
                }, "required": ["old_text", "new_text"]}}
            }, "required": ["path", "edits"]}),
        ),
        tool(
            "update_plan",
            json!({"type": "object", "properties": {
                "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                "note": {"type": ["string", "null"]},
                "ratio": {"type": "number"},
                "extra": {"type": "object"},
                "anything": {}
            }, "required": ["status"]}),
        ),
    ]
}

/// Whether `text` is a complete call with its closing tag.
fn complete(text: &str) -> bool {
    let shapes = Shapes::for_calls(&tools());
    Matcher::new(&shapes, CLOSE_TAG)
        .feed(&shapes, text.as_bytes())
        .is_some_and(|m| m.is_done())
}

/// Whether some valid call starts with `text`.
fn prefix(text: &str) -> bool {
    let shapes = Shapes::for_calls(&tools());
    Matcher::new(&shapes, CLOSE_TAG)
        .feed(&shapes, text.as_bytes())
        .is_some()
}

/// Feeds `text` one byte per call, as a model writing byte tokens would.
fn complete_bytewise(text: &str) -> bool {
    let shapes = Shapes::for_calls(&tools());
    let mut m = Matcher::new(&shapes, CLOSE_TAG);
    for b in text.bytes() {
        match m.feed(&shapes, &[b]) {
            Some(next) => m = next,
            None => return false,
        }
    }
    m.is_done()
}

const VALID: &[&str] = &[
    "\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"Cargo.toml\"}}\n</tool_call>",
    "{\"name\":\"read_file\",\"arguments\":{\"limit\":20,\"path\":\"a b\\\"c\\u00e9\",\"offset\":1}}</tool_call>",
    "{\"name\": \"edit_file\", \"arguments\": {\"path\": \"m.py\", \"edits\": [{\"old_text\": \"x = 1\\n\", \"new_text\": \"x = 2\", \"replace_all\": false}]}}\n</tool_call>",
    "{\"name\": \"edit_file\", \"arguments\": {\"path\": \"m.py\", \"edits\": []}}</tool_call>",
    "{\n  \"name\": \"update_plan\",\n  \"arguments\": {\n    \"status\": \"in_progress\",\n    \"note\": null,\n    \"ratio\": -0.5e+3,\n    \"extra\": {\"k\": [1, true, {\"z\": null}]},\n    \"anything\": [\"x\", 0]\n  }\n}\n</tool_call>",
    // Raw line breaks inside a string: hearth's parser escapes them, so they are let through.
    "{\"name\": \"edit_file\", \"arguments\": {\"path\": \"m.py\", \"edits\": [{\"old_text\": \"a\nb\", \"new_text\": \"\tc\"}]}}</tool_call>",
];

#[test]
fn valid_calls_are_accepted_whole_and_byte_by_byte() {
    for call in VALID {
        assert!(complete(call), "whole: {call}");
        assert!(complete_bytewise(call), "bytewise: {call}");
    }
}

#[test]
fn the_call_is_done_only_after_the_closing_tag() {
    let call = "{\"name\": \"read_file\", \"arguments\": {\"path\": \"x\"}}";
    assert!(prefix(call) && !complete(call));
    assert!(prefix(&format!("{call}\n</tool")));
    assert!(!prefix(&format!("{call}\nDone.")), "text before the tag");
    assert!(
        !prefix(&format!("{call}</tool_call>more")),
        "nothing after the tag"
    );
}

#[test]
fn names_must_be_declared_tools() {
    assert!(prefix("{\"name\": \"read_"));
    assert!(!prefix("{\"name\": \"write_fizzbuzz"));
    assert!(!prefix("{\"name\": \"read_filex"));
    assert!(!prefix("{\"name\": \"read_file\\"), "no escapes in a name");
}

#[test]
fn the_envelope_keeps_its_order_and_keys() {
    assert!(!prefix("{\"arguments\""), "name comes first");
    assert!(!prefix("{\"name\": \"read_file\", \"args\""));
    assert!(
        !prefix("{\"name\": \"read_file\"}"),
        "arguments are required"
    );
    assert!(!prefix(
        "{\"name\": \"read_file\", \"arguments\": {\"path\": \"x\"},"
    ));
    assert!(!prefix("[{\"name\""), "one call, not a list");
}

#[test]
fn arguments_hold_to_the_schema() {
    let head = "{\"name\": \"read_file\", \"arguments\": ";
    let cases = [
        ("{\"file_path\"", false, "an invented key"),
        ("{\"path\": \"a\", \"path\"", false, "a key twice"),
        ("{}", false, "a required key missing"),
        (
            "{\"offset\": 3}",
            false,
            "a required key missing after others",
        ),
        ("{\"path\": 7", false, "a number for a string"),
        (
            "{\"path\": \"a\", \"offset\": \"3\"",
            false,
            "a string for an integer",
        ),
        (
            "{\"path\": \"a\", \"offset\": 3.5",
            false,
            "a fraction for an integer",
        ),
        ("{\"path\": \"a\", \"offset\": 03", false, "a leading zero"),
        (
            "{\"path\": \"a\", \"offset\": -",
            true,
            "a sign may start an integer",
        ),
        (
            "{\"path\": \"a\", \"offset\": True",
            false,
            "Python literals",
        ),
        ("{\"path\": \"a\",}", false, "a trailing comma"),
        ("{\"path\": \"a\\q\"", false, "an unknown escape"),
        ("{\"path\": \"a\u{1}\"", false, "a raw control byte"),
        ("{\"path\": \"a\"", true, "an open object"),
    ];
    for (args, ok, why) in cases {
        assert_eq!(prefix(&format!("{head}{args}")), ok, "{why}: {args}");
    }
    let edit = "{\"name\": \"edit_file\", \"arguments\": {\"path\": \"m\", \"edits\": ";
    assert!(
        !prefix(&format!("{edit}[{{\"old_text\": \"a\"}}")),
        "new_text missing"
    );
    assert!(
        !prefix(&format!("{edit}[{{\"old\"")),
        "an invented item key"
    );
    assert!(!prefix(&format!("{edit}\"x\"")), "a string for an array");
    assert!(
        !prefix(&format!("{edit}[],")),
        "no keys left after the last"
    );
    let plan = "{\"name\": \"update_plan\", \"arguments\": {\"status\": ";
    assert!(prefix(&format!("{plan}\"in_")));
    assert!(!prefix(&format!("{plan}\"done\"")), "not one of the enum");
    assert!(
        !prefix(&format!("{plan}\"pending\", \"note\": 3")),
        "string or null"
    );
}

#[test]
fn blanks_are_bounded() {
    let spaces = " ".repeat(MAX_BLANKS as usize);
    assert!(prefix(&format!("{{{spaces}\"name\"")));
    assert!(!prefix(&format!("{{{spaces} ")));
}

#[test]
fn every_accepted_prefix_of_a_valid_call_can_be_continued() {
    // The bytes of each valid call, walked one at a time: the states kept after each byte
    // are never dead ends, which the sampler relies on.
    let shapes = Shapes::for_calls(&tools());
    for call in VALID {
        let mut m = Matcher::new(&shapes, CLOSE_TAG);
        for (i, b) in call.bytes().enumerate() {
            m = m.feed(&shapes, &[b]).unwrap();
            let can_go_on = m.is_done() || (0..=255u8).any(|x| m.feed(&shapes, &[x]).is_some());
            assert!(can_go_on, "dead end after {:?}", &call[..=i]);
        }
    }
}

#[test]
fn schemas_the_reader_does_not_know_allow_any_value() {
    let shapes = Shapes::for_schema(&json!({"$ref": "#/defs/x"}));
    for value in ["1", "\"s\"", "[1, {\"a\": null}]", "{\"k\": false}"] {
        assert!(
            Matcher::new(&shapes, b"")
                .feed(&shapes, value.as_bytes())
                .is_some(),
            "{value}"
        );
    }
    let shapes = Shapes::for_schema(&json!({"anyOf": [{"type": "integer"}, {"type": "string"}]}));
    let m = Matcher::new(&shapes, b"");
    assert!(m.feed(&shapes, b"\"x\"").is_some_and(|m| m.is_done()));
    assert!(m.feed(&shapes, b"true").is_none());
}

#[test]
fn many_tools_each_get_their_own_arguments() {
    let tools: Vec<ToolSpec> = (0..150)
        .map(|i| {
            let arg = format!("arg_{i}");
            let schema = json!({"type": "object", "properties": {&arg: {"type": "integer"}},
                "required": [&arg]});
            tool(&format!("tool_{i}"), schema)
        })
        .collect();
    let shapes = Shapes::for_calls(&tools);
    let m = Matcher::new(&shapes, CLOSE_TAG);
    let call = |name: &str, key: &str| {
        format!("{{\"name\": \"{name}\", \"arguments\": {{\"{key}\": 1}}}}</tool_call>")
    };
    let done = |text: String| {
        m.feed(&shapes, text.as_bytes())
            .is_some_and(|m| m.is_done())
    };
    assert!(done(call("tool_142", "arg_142")));
    assert!(done(call("tool_1", "arg_1")));
    assert!(!done(call("tool_142", "arg_14")), "another tool's argument");
    assert!(!done(call("tool_150", "arg_150")), "not declared");
}

#[test]
fn a_tool_without_arguments_takes_only_an_empty_object() {
    let tools = [tool(
        "list_dir",
        json!({"type": "object", "properties": {}}),
    )];
    let shapes = Shapes::for_calls(&tools);
    let m = Matcher::new(&shapes, CLOSE_TAG);
    let head = "{\"name\": \"list_dir\", \"arguments\": ";
    let done = format!("{head}{{ }}}}\n</tool_call>");
    assert!(
        m.feed(&shapes, done.as_bytes())
            .is_some_and(|m| m.is_done())
    );
    assert!(m.feed(&shapes, format!("{head}{{\"").as_bytes()).is_none());
}

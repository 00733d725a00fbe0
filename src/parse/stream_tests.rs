//! Table tests: one real-looking model output per failure class, each run whole, in 1-char
//! chunks and split at every position through the shared `split_invariant` helper.

use serde_json::json;

use super::super::test_support::E::*;
use super::super::test_support::{E, case, check, config, split_invariant};
use super::super::{ParseEvent, Repair, StreamEnd, ThinkStart, ToolFormat};

fn repairs_of(events: &[ParseEvent]) -> Vec<Repair> {
    events
        .iter()
        .filter_map(|e| match e {
            ParseEvent::ToolCall(c) => Some(c.repairs.clone()),
            _ => None,
        })
        .flatten()
        .collect()
}

const READ_A: &str = r#"{"name": "read_file", "arguments": {"path": "src/main.rs"}}"#;

fn read_a() -> E {
    C("read_file", json!({"path": "src/main.rs"}))
}

#[test]
fn prose_with_markup_characters_stays_text() {
    let input =
        "Compare `a < b` and `x<y>`; a map {k: v} or [1, 2]. Emoji 🦀 </think ok. ``not a fence``";
    check(&case("prose", input, vec![T(input)]));
}

#[test]
fn clean_hermes_calls_with_text_around_and_between() {
    let input = "I'll read both files.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/main.rs\"}}\n</tool_call>\nand\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"Cargo.toml\"}}\n</tool_call>\nDone.";
    let got = check(&case(
        "two calls",
        input,
        vec![
            T("I'll read both files.\n"),
            read_a(),
            T("\nand\n"),
            C("read_file", json!({"path": "Cargo.toml"})),
            T("\nDone."),
        ],
    ));
    assert!(repairs_of(&got).is_empty(), "clean calls need no repair");
}

#[test]
fn several_calls_in_one_chunk_and_array_bodies() {
    let input = "<tool_call>{\"name\":\"list_dir\",\"arguments\":{}}</tool_call><tool_call>[{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/main.rs\"}}, {\"name\": \"run\", \"arguments\": {\"command\": \"ls\"}}]</tool_call>";
    check(&case(
        "many",
        input,
        vec![
            C("list_dir", json!({})),
            read_a(),
            C("run", json!({"command": "ls"})),
        ],
    ));
}

#[test]
fn missing_closing_tag() {
    let input =
        "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/main.rs\"}}\n";
    let got = check(&case("eos", input, vec![read_a()]));
    assert!(repairs_of(&got).contains(&Repair::MissingCloseTag));
    // The next opener ends the previous call.
    let input = "<tool_call>\n{\"name\": \"list_dir\", \"arguments\": {}}\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/main.rs\"}}\n</tool_call>";
    check(&case(
        "next opener",
        input,
        vec![C("list_dir", json!({})), read_a()],
    ));
    // Prose after a call that never closed is text again.
    let input = "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/main.rs\"}}\nI have asked for the file.";
    check(&case(
        "prose after",
        input,
        vec![read_a(), T("I have asked for the file.")],
    ));
}

#[test]
fn truncation_by_token_limit_is_never_executed() {
    let mut c = case(
        "length",
        "Reading.\n<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"a.txt\", \"content\": \"hel",
        vec![T("Reading.\n"), Bad("cut off by the output token limit")],
    );
    c.end = StreamEnd::Length;
    check(&c);
    // Even when the JSON happens to be complete: the close tag never came.
    let mut c = case(
        "length complete",
        "<tool_call>\n{\"name\": \"list_dir\", \"arguments\": {}}",
        vec![Bad("cut off")],
    );
    c.end = StreamEnd::Length;
    check(&c);
}

#[test]
fn missing_and_extra_braces() {
    let got = check(&case(
        "missing brace",
        "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/main.rs\"}\n</tool_call>",
        vec![read_a()],
    ));
    assert!(repairs_of(&got).contains(&Repair::MissingBraces));
    let got = check(&case(
        "extra brace",
        "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/main.rs\"}}}\n</tool_call>",
        vec![read_a()],
    ));
    assert!(repairs_of(&got).contains(&Repair::StrayClosers));
}

#[test]
fn name_nested_or_arguments_under_parameters_or_as_string() {
    let cases = [
        r#"<tool_call>{"arguments": {"name": "read_file", "path": "src/main.rs"}}</tool_call>"#,
        r#"<tool_call>{"name": "read_file", "parameters": {"path": "src/main.rs"}}</tool_call>"#,
        r#"<tool_call>{"name": "read_file", "arguments": "{\"path\": \"src/main.rs\"}"}</tool_call>"#,
        r#"<tool_call>{"type": "function", "function": {"name": "read_file", "arguments": {"path": "src/main.rs"}}}</tool_call>"#,
        r#"<tool_call>{"name": "read_file", "path": "src/main.rs"}</tool_call>"#,
    ];
    let want = [
        Repair::NameInArguments,
        Repair::ParametersKey,
        Repair::ArgumentsString,
        Repair::Unwrapped,
        Repair::FlatArguments,
    ];
    for (input, repair) in cases.into_iter().zip(want) {
        let got = check(&case("shape", input, vec![read_a()]));
        assert!(repairs_of(&got).contains(&repair), "{input}: {got:?}");
    }
}

#[test]
fn python_literals_and_single_quotes_keep_apostrophes() {
    let input = "<tool_call>\n{'name': 'run', 'arguments': {'command': \"echo it's done\", 'background': False, 'env': None}}\n</tool_call>";
    // `env: None` is not an object: the schema says so.
    check(&case(
        "python",
        input,
        vec![Bad("argument `env` of `run` must be an object, not null")],
    ));
    let input = "<tool_call>\n{'name': 'run', 'arguments': {'command': \"echo it's done\", 'background': False}}\n</tool_call>";
    let got = check(&case(
        "python ok",
        input,
        vec![C(
            "run",
            json!({"command": "echo it's done", "background": false}),
        )],
    ));
    assert!(repairs_of(&got).contains(&Repair::PythonLiterals));
}

#[test]
fn raw_newlines_in_strings_and_close_tag_inside_strings() {
    let input = "<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"notes.md\", \"content\": \"# Notes\n\tUse </tool_call> to end a call.\n\"}}\n</tool_call>";
    let got = check(&case(
        "raw newline",
        input,
        vec![C(
            "write_file",
            json!({"path": "notes.md", "content": "# Notes\n\tUse </tool_call> to end a call.\n"}),
        )],
    ));
    assert!(repairs_of(&got).contains(&Repair::ControlChars));
}

#[test]
fn code_fences_in_and_instead_of_tags() {
    let input = "<tool_call>\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/main.rs\"}}\n```\n</tool_call>";
    check(&case("fence inside", input, vec![read_a()]));
    // Qwen2.5-Coder behind llama.cpp (docs/qwen-formats.md §1.4): a lone fenced call.
    let input =
        "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/main.rs\"}}\n```";
    check(&case("fenced call", input, vec![read_a()]));
    let input = "Example config:\n```json\n{\"name\": \"my-app\", \"version\": \"1.0\"}\n```\nand code:\n```rust\nfn main() {}\n```";
    check(&case("fenced json that is no call", input, vec![T(input)]));
}

#[test]
fn bare_json_and_json_in_prose() {
    check(&case("bare", READ_A, vec![read_a()]));
    let input = "\n[{\"name\": \"list_dir\", \"arguments\": {}}, {\"name\": \"read_file\", \"parameters\": {\"path\": \"src/main.rs\"}}]";
    check(&case(
        "bare array",
        input,
        vec![T("\n"), C("list_dir", json!({})), read_a()],
    ));
    let input = "The call looks like {\"name\": \"read_file\", \"arguments\": {\"path\": \"x\"}} in the log.";
    check(&case("prose json", input, vec![T(input)]));
    let input = "{\"status\": \"ok\", \"items\": [1, 2]} is the response.";
    check(&case("bare json no call", input, vec![T(input)]));
    let input = "{\"tool\": \"read_file\", \"params\": {\"path\": \"src/main.rs\"}}";
    check(&case(
        "wrong keys",
        input,
        vec![Bad("uses the keys \"tool\", \"params\"")],
    ));
}

#[test]
fn wrapper_tags() {
    for (open, close) in [
        ("<tools>", "</tools>"),
        ("<function_call>", "</function_call>"),
        ("<json>", "</json>"),
    ] {
        let input = format!("{open}\n{READ_A}\n{close}");
        let input: &'static str = Box::leak(input.into_boxed_str());
        check(&case("wrapper", input, vec![read_a()]));
    }
    let input = "Wrap data in <json>{\"a\": 1}</json> tags.";
    check(&case("wrapper no call", input, vec![T(input)]));
    // Prose about such elements streams without waiting for a closer.
    let mut p = super::StreamParser::new(config(ToolFormat::Auto, ThinkStart::Closed));
    let events = p.feed("The <tool> element holds a name");
    assert_eq!(
        events,
        vec![ParseEvent::Text("The <tool> element holds a name".into())]
    );
}

#[test]
fn qwen3_coder_xml() {
    let input = "I'll write it.\n<tool_call>\n<function=write_file>\n<parameter=path>\na.txt\n</parameter>\n<parameter=content>\nfn main() {\n    println!(\"</x> \\\" {\");\n}\n</parameter>\n</function>\n</tool_call>";
    check(&case(
        "xml",
        input,
        vec![
            T("I'll write it.\n"),
            C(
                "write_file",
                json!({"path": "a.txt", "content": "fn main() {\n    println!(\"</x> \\\" {\");\n}"}),
            ),
        ],
    ));
    let input = "<tool_call>\n<function=run>\n<parameter=command>\ncargo test\n<parameter=timeout>\n30\n<parameter=background>\nTrue\n<parameter=env>\n{'RUST_LOG': 'debug'}\n</tool_call>";
    let got = check(&case(
        "xml missing closers, coerced",
        input,
        vec![C(
            "run",
            json!({"command": "cargo test", "timeout": 30, "background": true, "env": {"RUST_LOG": "debug"}}),
        )],
    ));
    assert!(repairs_of(&got).contains(&Repair::MissingCloseTag));
    assert!(repairs_of(&got).contains(&Repair::CoercedType));
    let input = "<function=read_file>\n<parameter=path>\nsrc/main.rs\n</parameter>\n</function>\n</tool_call>";
    check(&case("bare function", input, vec![read_a(), T("\n")]));
    let input = "Use <function=helper> for that.";
    check(&case("bare undeclared function", input, vec![T(input)]));
    let input = "<tool_call>\n<function=read_file>\n<parameter=path>\nsrc/main.rs\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=list_dir>\n</function>\n</tool_call>";
    check(&case(
        "two xml",
        input,
        vec![read_a(), T("\n"), C("list_dir", json!({}))],
    ));
}

#[test]
fn an_invented_tool_in_a_call_shaped_object_is_answered_not_shown() {
    let fenced =
        "```json\n{\n  \"name\": \"write_fizzbuzz\",\n  \"arguments\": {\"n\": 15}\n}\n```";
    check(&case(
        "fenced",
        fenced,
        vec![Bad("unknown tool `write_fizzbuzz`")],
    ));
    let bare = "{\"name\": \"is_prime\", \"parameters\": {\"n\": 7}}";
    check(&case("bare", bare, vec![Bad("unknown tool `is_prime`")]));
    // Not exactly a call's shape: JSON in an answer stays the answer. After prose it is shown
    // as it streamed, and still answered.
    let data = "{\"name\": \"Ada\", \"arguments\": [], \"age\": 36}";
    check(&case("data", data, vec![T(data)]));
    let shown = "Like this:\n{\"name\": \"x\", \"arguments\": {}}";
    check(&case(
        "after prose",
        shown,
        vec![T(shown), Bad("unknown tool `x`")],
    ));
    // Turned off, the object is shown as it came.
    let mut cfg = config(ToolFormat::Auto, ThinkStart::Closed);
    cfg.text_calls = super::super::TextCalls::Show;
    let got = split_invariant(&cfg, fenced, StreamEnd::Stop);
    assert_eq!(got, vec![ParseEvent::Text(fenced.into())]);
}

#[test]
fn names_resolved_strictly() {
    let input = "<tool_call>{\"name\": \"todorantum\", \"arguments\": {}}</tool_call>";
    check(&case(
        "unknown",
        input,
        vec![Bad(
            "unknown tool `todorantum`; available: read_file, write_file, run, list_dir",
        )],
    ));
    let input = "<tool_call>{\"name\": \"readfile\", \"arguments\": {\"path\": \"a\"}}</tool_call>";
    check(&case(
        "near miss is not guessed",
        input,
        vec![Bad("unknown tool `readfile`")],
    ));
    let input = "<tool_call>{\"name\": \"Read_File\", \"arguments\": {\"path\": \"src/main.rs\"}}</tool_call>";
    let got = check(&case("case", input, vec![read_a()]));
    assert!(repairs_of(&got).contains(&Repair::NameCase));
    let input = "<tool_call>{\"arguments\": {\"command\": \"ls -la\"}}</tool_call>";
    check(&case(
        "inferred",
        input,
        vec![C("run", json!({"command": "ls -la"}))],
    ));
    let input = "<tool_call>{\"arguments\": {\"path\": \"a\"}}</tool_call>";
    check(&case(
        "inferred by required",
        input,
        vec![C("read_file", json!({"path": "a"}))],
    ));
    let input = "<tool_call>{\"arguments\": {\"path\": \"a\", \"command\": \"ls\"}}</tool_call>";
    check(&case("fits none", input, vec![Bad("no tool name")]));
}

#[test]
fn schema_validation() {
    let input =
        "<tool_call>{\"name\": \"write_file\", \"arguments\": {\"path\": \"a.txt\"}}</tool_call>";
    check(&case(
        "required",
        input,
        vec![Bad("`write_file` is missing required argument(s): content")],
    ));
    let input = "<tool_call>{\"name\": \"run\", \"arguments\": {\"command\": \"sleep 1\", \"timeout\": \"5\"}}</tool_call>";
    check(&case(
        "coerce",
        input,
        vec![C("run", json!({"command": "sleep 1", "timeout": 5}))],
    ));
    let input = "<tool_call>{\"name\": \"list_dir\", \"arguments\": \"\"}</tool_call>";
    check(&case("empty args", input, vec![C("list_dir", json!({}))]));
    let input = "<tool_call>{\"name\": \"run\", \"arguments\": [\"ls\"]}</tool_call>";
    check(&case(
        "args array",
        input,
        vec![Bad(
            "arguments of `run` must be a JSON object, not an array",
        )],
    ));
    let input =
        "<tool_call>{\"name\": \"run\", \"arguments\": {\"command\": \"ls\" \"x\"}}</tool_call>";
    check(&case(
        "invalid json",
        input,
        vec![Bad("not valid JSON (unexpected `\"` on line 1)")],
    ));
    // Both tags written with nothing between: prose naming them. An opener the stream
    // ended after is a call that never came.
    check(&case(
        "empty",
        "<tool_call>\n</tool_call>",
        vec![T("<tool_call>\n</tool_call>")],
    ));
    check(&case("empty open", "<tool_call>\n", vec![Bad("empty")]));
}

#[test]
fn hallucinated_continuation_is_cut() {
    let input = "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/main.rs\"}}\n</tool_call>\n<tool_response>\nfn main() {}\n</tool_response>\n<|im_start|>assistant\nIt is empty.";
    check(&case("cut", input, vec![read_a(), T("\n")]));
}

#[test]
fn think_routing() {
    let input = "<think>\nThe user wants the file.\n</think>\n\nSure, the answer is 42.";
    check(&case(
        "inline",
        input,
        vec![R("The user wants the file."), T("Sure, the answer is 42.")],
    ));
    let mut c = case(
        "prefilled",
        "I should list files first.\n</think>\n\nDone.",
        vec![R("I should list files first."), T("Done.")],
    );
    c.think = ThinkStart::Open;
    check(&c);
    let mut c = case(
        "cut",
        "<think>\nLet me consider the options. First",
        vec![R("Let me consider the options. First"), Cut],
    );
    c.end = StreamEnd::Length;
    check(&c);
}

#[test]
fn calls_inside_think() {
    // Written in a think block that later closes: only thought about.
    let input = "<think>\nI could call <tool_call>{\"name\": \"run\", \"arguments\": {\"command\": \"rm -rf /\"}}</tool_call> but no.\n</think>\nNo call needed.";
    check(&case(
        "closed think",
        input,
        vec![
            R(
                "I could call <tool_call>{\"name\": \"run\", \"arguments\": {\"command\": \"rm -rf /\"}}</tool_call> but no.",
            ),
            T("No call needed."),
        ],
    ));
    // Qwen3.5: the call inside a think block that never closes is the real call, and ended
    // the reasoning (it is no thought).
    let input = "Need the file.\n<tool_call>\n<function=read_file>\n<parameter=path>\nsrc/main.rs\n</parameter>\n</function>\n</tool_call>";
    let mut c = case("open think", input, vec![R("Need the file."), read_a()]);
    c.think = ThinkStart::Open;
    check(&c);
    // ... unless the token limit cut the thought: then it was all thought.
    c.end = StreamEnd::Length;
    c.want = vec![R(input), Cut];
    check(&c);
}

#[test]
fn native_format_still_reads_a_call_the_server_left_in_the_text() {
    // llama.cpp returns a call its template missed as text in `content`, finish `stop`: it is
    // the call it says it is, not the answer.
    let input = "<think>hm</think><tool_call>{\"name\": \"list_dir\"}</tool_call>";
    let mut c = case("native", input, vec![R("hm"), C("list_dir", json!({}))]);
    c.format = ToolFormat::Native;
    check(&c);
    let bare = "{\"name\": \"list_dir\", \"arguments\": {}}";
    let mut c = case("native bare", bare, vec![C("list_dir", json!({}))]);
    c.format = ToolFormat::Native;
    check(&c);
}

#[test]
fn out_of_band_reasoning_and_reset() {
    let mut p = super::StreamParser::new(config(ToolFormat::Auto, ThinkStart::Closed));
    assert_eq!(
        p.feed_reasoning("thinking"),
        vec![ParseEvent::Reasoning("thinking".into())]
    );
    assert_eq!(p.feed("<tool_"), vec![]);
    p.reset();
    assert_eq!(p.feed("hi"), vec![ParseEvent::Text("hi".into())]);
    assert_eq!(p.finish(StreamEnd::Stop), vec![]);
    assert_eq!(p.feed_reasoning("late"), vec![]);
}

#[test]
fn unbalanced_quote_falls_back_to_the_literal_close_tag() {
    let input = "<tool_call>{\"name\": \"run\", \"arguments\": {\"command\": \"echo \"hi\"\"}}</tool_call>\nRan it.";
    check(&case(
        "unbalanced",
        input,
        vec![Bad("not valid JSON"), T("\nRan it.")],
    ));
}

#[test]
fn partial_tags_never_reach_the_text() {
    // Each prefix of an opener, fed alone, produces no text until decided.
    for n in 1..CALL.len() {
        let mut p = super::StreamParser::new(config(ToolFormat::Auto, ThinkStart::Closed));
        let events = p.feed(&CALL[..n]);
        assert!(events.is_empty(), "{:?} leaked {events:?}", &CALL[..n]);
    }
}

const CALL: &str = "<tool_call>";

#[test]
fn xml_markup_inside_json_strings_is_data() {
    let input = "<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"p.md\", \"content\": \"Write <function=f> then <parameter=k>.\"}}\n</tool_call>";
    check(&case(
        "xml in json",
        input,
        vec![C(
            "write_file",
            json!({"path": "p.md", "content": "Write <function=f> then <parameter=k>."}),
        )],
    ));
}

#[test]
fn xml_names_missing_their_closing_bracket() {
    let input = "<tool_call>\n<function=read_file\n<parameter=path\nsrc/main.rs\n</parameter>\n</function>\n</tool_call>";
    let got = check(&case("lost >", input, vec![read_a()]));
    assert!(repairs_of(&got).contains(&Repair::MissingCloseTag));
    let input = "<tool_call>\n<function=>\n</function>\n</tool_call>";
    check(&case(
        "no name",
        input,
        vec![Bad("the tool name goes in <function=NAME>")],
    ));
}

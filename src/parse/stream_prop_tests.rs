//! Property test: arbitrary model output, fed in arbitrary chunks, never panics, never yields a
//! call to an undeclared tool, accounts for every input byte (checked in `run_chunks`), and gives
//! the same events as feeding it whole.

use proptest::prelude::*;

use super::super::test_support::{config, run_chunks, tools};
use super::super::{ParseEvent, StreamEnd, ThinkStart, ToolFormat};

/// Fragments that exercise every branch of the scanner, mixed with arbitrary text.
fn fragment() -> impl Strategy<Value = String> {
    let pieces = [
        "<think>",
        "</think>",
        "<tool_call>",
        "</tool_call>",
        "<tool_call>\n",
        "<function=read_file>",
        "<function=nope>",
        "<parameter=path>",
        "</parameter>",
        "</function>",
        "<tools>",
        "</tools>",
        "<json>",
        "```json\n",
        "```\n",
        "```",
        "{",
        "}",
        "[",
        "]",
        "\"",
        "\\",
        "'",
        ":",
        ",",
        "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}",
        "\"name\"",
        "\"arguments\"",
        "\"read_file\"",
        "\"run\"",
        "True",
        "None",
        "<tool_response>",
        "<|im_start|>",
        "<",
        "<t",
        "</",
        "\n",
        " ",
        "é",
        "🦀",
        "text",
        "<function=",
        "<tool_",
    ];
    prop_oneof![
        3 => proptest::sample::select(pieces.to_vec()).prop_map(str::to_string),
        1 => "[a-z <>{}\"\\n]{0,8}",
        1 => any::<String>().prop_map(|s| s.chars().take(6).collect()),
    ]
}

fn input() -> impl Strategy<Value = String> {
    proptest::collection::vec(fragment(), 0..40).prop_map(|v| v.concat())
}

/// Splits `s` at char boundaries given by `cuts` (taken modulo the length).
fn chunk(s: &str, cuts: &[usize]) -> Vec<String> {
    let bounds: Vec<usize> = s.char_indices().map(|(i, _)| i).skip(1).collect();
    let mut at: Vec<usize> = cuts
        .iter()
        .filter(|_| !bounds.is_empty())
        .map(|c| bounds[c % bounds.len()])
        .collect();
    at.sort_unstable();
    at.dedup();
    let mut out = Vec::new();
    let mut prev = 0;
    for a in at {
        out.push(s[prev..a].to_string());
        prev = a;
    }
    out.push(s[prev..].to_string());
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_input_and_chunking(
        text in input(),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
        open in any::<bool>(),
        length in any::<bool>(),
        native in any::<bool>(),
    ) {
        let think = if open { ThinkStart::Open } else { ThinkStart::Closed };
        let format = if native { ToolFormat::Native } else { ToolFormat::Auto };
        let end = if length { StreamEnd::Length } else { StreamEnd::Stop };
        let cfg = config(format, think);
        let whole = run_chunks(&cfg, &[text.as_str()], end);
        let parts = chunk(&text, &cuts);
        let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
        let chunked = run_chunks(&cfg, &refs, end);
        prop_assert_eq!(&chunked, &whole);
        let declared: Vec<String> = tools().into_iter().map(|t| t.name).collect();
        for e in &whole {
            if let ParseEvent::ToolCall(c) = e {
                prop_assert!(declared.contains(&c.name), "undeclared call {}", c.name);
                prop_assert!(c.arguments.is_object());
            }
        }
    }
}

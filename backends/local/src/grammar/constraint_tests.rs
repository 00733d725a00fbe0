use std::sync::Arc;

use hearth_backend::ToolSpec;
use serde_json::json;

use super::*;
use crate::grammar::Vocab;
use crate::grammar::vocab::TokenKind::{Added, End, Text};

const TOKENS: &[(&str, super::TokenKind)] = &[
    ("<|im_end|>", End),
    ("<tool_call>", Added),
    ("</tool_call>", Added),
    ("<|im_start|>", Added),
    ("\n", Text),
    ("{\"", Text),
    ("name", Text),
    ("\":", Text),
    (" \"", Text),
    ("read_file", Text),
    ("\",", Text),
    ("arguments", Text),
    (" {\"", Text),
    ("path", Text),
    ("file_path", Text),
    ("a.txt", Text),
    ("\"}}", Text),
    ("<tool", Text),
    ("_call>", Text),
    ("`", Text),
    ("Sure", Text),
    ("", Text),
    ("{", Text),
    ("\"}}\n", Text),
];

fn id(text: &str) -> u32 {
    TOKENS.iter().position(|(t, _)| *t == text).unwrap() as u32
}

fn grammar() -> CallGrammar {
    grammar_holding_bare_calls(false)
}

fn grammar_holding_bare_calls(bare: bool) -> CallGrammar {
    let tools = [ToolSpec {
        name: "read_file".into(),
        description: String::new(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}},
            "required": ["path"]}),
    }];
    CallGrammar::new(&tools, Arc::new(Vocab::from_entries(TOKENS)))
        .unwrap()
        .holding_bare_calls(bare)
}

fn write(c: &mut CallConstraint<'_>, tokens: &[&str]) {
    for t in tokens {
        assert!(c.allows(id(t)), "{t:?} refused");
        c.accept(id(t), false);
    }
}

const CALL: &[&str] = &[
    "\n",
    "{\"",
    "name",
    "\":",
    " \"",
    "read_file",
    "\",",
    " \"",
    "arguments",
    "\":",
    " {\"",
    "path",
    "\":",
    " \"",
    "a.txt",
    "\"}}",
    "\n",
];

#[test]
fn text_is_free_until_a_call_opens_then_held_until_it_closes() {
    let g = grammar();
    let mut c = CallConstraint::new(&g, b"<|im_start|>assistant\n");
    assert!(!c.is_active());
    assert!(c.allows(id("<|im_end|>")) && c.allows(id("file_path")));
    write(&mut c, &["Sure", "\n", "<tool_call>"]);
    assert!(c.is_active());
    write(&mut c, &CALL[..12]);
    assert!(!c.allows(id("file_path")), "an undeclared key");
    assert!(
        !c.allows(id("<|im_end|>")),
        "the end of the turn inside a call"
    );
    assert!(
        !c.allows(id("</tool_call>")),
        "the tag before the JSON is complete"
    );
    assert!(
        !c.allows(id("<|im_start|>")),
        "added tokens other than the closing tag"
    );
    assert!(!c.allows(id("")), "a token that writes nothing");
    write(&mut c, &CALL[12..]);
    write(&mut c, &["</tool_call>"]);
    assert!(!c.is_active(), "closed");
    assert_eq!(c.constrained, CALL.len() + 1);
    assert!(c.allows(id("<|im_end|>")) && c.allows(id("Sure")));
}

#[test]
fn a_tag_split_across_tokens_opens_a_call_but_one_in_inline_code_does_not() {
    let g = grammar();
    let mut c = CallConstraint::new(&g, b"");
    write(&mut c, &["<tool", "_call>"]);
    assert!(c.is_active());

    let mut c = CallConstraint::new(&g, b"");
    write(&mut c, &["Sure", "`", "<tool_call>", "`"]);
    assert!(!c.is_active(), "prose about the format");
}

#[test]
fn a_prompt_that_ends_inside_an_opened_call_starts_held() {
    let g = grammar();
    let mut c = CallConstraint::new(&g, b"<|im_start|>assistant\n<tool_call>");
    assert!(c.is_active());
    assert!(!c.allows(id("Sure")));
    write(&mut c, CALL);
    write(&mut c, &["</tool_call>"]);
    assert!(!c.is_active());
}

#[test]
fn a_token_the_grammar_refused_ends_the_constraint() {
    let g = grammar();
    let mut c = CallConstraint::new(&g, b"<tool_call>");
    c.accept(id("Sure"), true);
    assert!(!c.is_active());
    assert_eq!(c.overruled, 1);
}

#[test]
fn an_answer_that_opens_with_a_bare_call_is_held_and_ends_when_it_closes() {
    let g = grammar_holding_bare_calls(true);
    let mut c = CallConstraint::new(&g, b"<|im_start|>assistant\n");
    write(&mut c, &["\n", "{", "\n", " \"", "name"]);
    assert!(!c.is_active(), "not before the key is whole");
    write(&mut c, &["\":"]);
    assert!(
        c.is_active() && c.is_tentative(),
        "the name is the model's to write"
    );
    write(&mut c, &CALL[4..5]);
    assert!(!c.allows(id("file_path")), "an undeclared tool");
    write(&mut c, &CALL[5..7]);
    assert!(
        !c.is_tentative(),
        "held once the model wrote a declared name"
    );
    write(&mut c, &CALL[7..15]);
    assert!(
        !c.allows(id("\"}}\n")),
        "nothing may follow the closing brace"
    );
    assert!(!c.bare_call_closed());
    write(&mut c, &CALL[15..16]);
    assert!(!c.is_active() && c.bare_call_closed());
}

#[test]
fn a_bare_call_is_left_alone_without_the_option_mid_line_or_pretty_printed() {
    let free = |g: &CallGrammar, prompt: &[u8], tokens: &[&str]| {
        let mut c = CallConstraint::new(g, prompt);
        write(&mut c, tokens);
        assert!(!c.is_active() && !c.bare_call_closed(), "{tokens:?}");
        assert!(c.allows(id("file_path")), "{tokens:?}");
    };
    let held = grammar_holding_bare_calls(true);
    free(&grammar(), b"\n", &CALL[1..5]);
    free(&held, b"\n", &["Sure", "{\"", "name", "\":", " \""]);
    free(
        &held,
        b"\n",
        &["Sure", "\n", "{", "\n", " \"", "name", "\":", " \""],
    );
    // A tagged call still ends at its tag, and the answer goes on.
    let mut c = CallConstraint::new(&held, b"<tool_call>");
    write(&mut c, CALL);
    write(&mut c, &["</tool_call>"]);
    assert!(!c.is_active() && !c.bare_call_closed());
}

#[test]
fn a_later_line_that_opens_a_call_is_held_once_the_model_names_a_declared_tool() {
    let g = grammar_holding_bare_calls(true);
    let mut c = CallConstraint::new(&g, b"\n");
    write(&mut c, &["Sure", "\n", "{\"", "name", "\":", " \""]);
    assert!(c.is_tentative(), "the name is the model's to write");
    assert!(!c.allows(id("file_path")));
    write(&mut c, &["read_file"]);
    assert!(c.is_tentative(), "the name's string is still open");
    write(&mut c, &["\","]);
    assert!(
        c.is_active() && !c.is_tentative(),
        "held once the name is written"
    );
    write(&mut c, &CALL[7..16]);
    assert!(c.bare_call_closed());
}

use std::sync::Arc;

use hearth_backend::ToolSpec;
use serde_json::json;

use super::*;
use crate::grammar::TokenKind::{Added, End, Text};
use crate::grammar::{TokenKind, Vocab};

const TOKENS: &[(&str, TokenKind)] = &[
    ("<|im_end|>", End),
    ("<tool_call>", Added),
    ("\n", Text),
    ("Sure", Text),
    ("{\"", Text),
    ("name", Text),
    ("\":", Text),
    (" \"", Text),
    ("John", Text),
    ("read", Text),
    ("_file", Text),
    ("\",", Text),
];

fn id(text: &str) -> u32 {
    TOKENS.iter().position(|(t, _)| *t == text).unwrap() as u32
}

fn vocab() -> Arc<Vocab> {
    Arc::new(Vocab::from_entries(TOKENS))
}

/// Logits where `best` is the model's first choice and `second` its next.
fn logits(best: &str, second: &str) -> Vec<f32> {
    let mut values = vec![0.0; TOKENS.len()];
    values[id(best) as usize] = 10.0;
    values[id(second) as usize] = 5.0;
    values
}

fn grammar() -> CallGrammar {
    let tools = [ToolSpec {
        name: "read_file".into(),
        description: String::new(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }];
    CallGrammar::new(&tools, vocab())
        .unwrap()
        .holding_bare_calls(true)
}

#[test]
fn a_later_line_whose_name_is_no_tool_is_let_go_and_one_that_names_a_tool_is_held() {
    let grammar = grammar();
    let line = ["Sure", "\n", "{\"", "name", "\":", " \""];
    let mut sampler = Sampler::new(SamplingParams::greedy());

    let mut calls = CallConstraint::new(&grammar, b"\n");
    for t in line {
        calls.accept(id(t), false);
    }
    assert!(calls.is_tentative());
    let token = next_token(&mut sampler, &mut calls, &mut logits("John", "read"), &[]).unwrap();
    assert_eq!(
        token,
        id("John"),
        "a JSON record is written as the model wants"
    );
    assert!(!calls.is_active());

    let mut calls = CallConstraint::new(&grammar, b"\n");
    for t in line {
        calls.accept(id(t), false);
    }
    for t in ["read", "_file", "\","] {
        let token = next_token(&mut sampler, &mut calls, &mut logits(t, "John"), &[]).unwrap();
        assert_eq!(token, id(t));
    }
    assert!(calls.is_active() && !calls.is_tentative());
    let token = next_token(&mut sampler, &mut calls, &mut logits("John", " \""), &[]).unwrap();
    assert_eq!(token, id(" \""), "held once the model wrote a tool's name");
}

#[test]
fn a_text_answer_takes_the_best_token_that_opens_no_call_and_is_not_blank() {
    let mut sampler = Sampler::new(SamplingParams::greedy());
    let mut text = TextOnly::new(vocab());
    let mut values = logits("<tool_call>", "\n");
    values[id("{\"") as usize] = 3.0;
    values[id("Sure") as usize] = 1.0;
    let token = text_token(&mut sampler, &mut text, &mut values, &[]);
    assert_eq!(
        token.unwrap(),
        id("Sure"),
        "neither a call nor a blank start"
    );
    let token = text_token(
        &mut sampler,
        &mut text,
        &mut logits("<|im_end|>", "\n"),
        &[],
    );
    assert_eq!(
        token.unwrap(),
        id("<|im_end|>"),
        "it may end once it said something"
    );
}

/// What the generate loop does with `call_first`: the tag is written for the model, and from
/// there the grammar holds the answer to a call, however much the model would rather talk.
#[test]
fn an_answer_opened_with_the_call_tag_for_the_model_is_held_to_a_call() {
    let grammar = grammar();
    let mut sampler = Sampler::new(SamplingParams::greedy());
    let mut calls = CallConstraint::new(&grammar, b"");
    calls.accept(id(CALL_OPEN), false);
    assert!(calls.is_active());
    let token = next_token(&mut sampler, &mut calls, &mut logits("Sure", "John"), &[]).unwrap();
    assert!(token != id("Sure") && token != id("John"), "{token}");
}

use hearth_backend::{BackendError, BackendEvent, FinishReason, NativeToolCall, Usage};
use serde_json::{Value, json};

use super::*;

fn decoder() -> Decoder {
    Decoder::new(
        Arc::new(OpenAiEndpoint::new("ollama", "http://h/v1")),
        "qwen",
        None,
    )
}

fn line(message: Value) -> String {
    json!({"model": "qwen", "created_at": "2026-01-01T00:00:00Z", "message": message, "done": false})
        .to_string()
}

fn done(reason: &str, prompt: u32, eval: u32) -> String {
    json!({"model": "qwen", "message": {"role": "assistant", "content": ""}, "done": true,
           "done_reason": reason, "total_duration": 1, "prompt_eval_count": prompt,
           "eval_count": eval})
    .to_string()
}

/// Feeds lines until `done`, collecting every event.
fn run(lines: &[String]) -> Vec<BackendEvent> {
    let mut d = decoder();
    let mut events = Vec::new();
    for l in lines {
        match d.feed(l).unwrap() {
            Decoded::More(more) => events.extend(more),
            Decoded::Done(last) => {
                events.extend(last);
                return events;
            }
        }
    }
    panic!("no done line in {lines:?}")
}

fn text(t: &str) -> BackendEvent {
    BackendEvent::Text { text: t.into() }
}

fn reasoning(t: &str) -> BackendEvent {
    BackendEvent::Reasoning { text: t.into() }
}

fn call(id: &str, name: &str, arguments: &str) -> BackendEvent {
    BackendEvent::ToolCall {
        call: NativeToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        },
    }
}

fn usage(prompt: u32, completion: u32) -> BackendEvent {
    BackendEvent::Usage {
        usage: Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            cached_tokens: None,
        },
    }
}

fn finished(reason: FinishReason) -> BackendEvent {
    BackendEvent::Finished { reason }
}

#[test]
fn thinking_text_and_tool_calls_come_out_in_the_sse_order() {
    let events = run(&[
        line(json!({"role": "assistant", "content": "", "thinking": "hmm "})),
        line(json!({"role": "assistant", "content": "", "thinking": "ok"})),
        line(json!({"role": "assistant", "content": "Let me "})),
        line(json!({"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "read", "arguments": {"path": "a.rs"}}},
            {"id": "srv-1", "function": {"index": 1, "name": "grep", "arguments": {"q": "x"}}},
        ]})),
        line(json!({"role": "assistant", "content": "look."})),
        done("stop", 120, 7),
    ]);
    assert_eq!(
        events,
        vec![
            reasoning("hmm "),
            reasoning("ok"),
            text("Let me "),
            text("look."),
            call("call_0", "read", r#"{"path":"a.rs"}"#),
            call("srv-1", "grep", r#"{"q":"x"}"#),
            usage(120, 7),
            finished(FinishReason::ToolCalls),
        ]
    );
}

#[test]
fn done_reasons_map_to_finish_reasons() {
    for (reason, want) in [
        ("stop", FinishReason::Stop),
        ("length", FinishReason::Length),
        ("", FinishReason::Stop),
        ("unload", FinishReason::Other("unload".into())),
    ] {
        let events = run(&[line(json!({"content": "a"})), done(reason, 1, 1)]);
        assert_eq!(events.last(), Some(&finished(want)), "{reason}");
    }
    let no_reason = json!({"done": true}).to_string();
    assert_eq!(
        run(&[no_reason]),
        vec![finished(FinishReason::Stop)],
        "no counts: no Usage"
    );
}

#[test]
fn arguments_sent_as_a_string_or_missing_are_kept_as_text() {
    let events = run(&[
        line(json!({"tool_calls": [
            {"function": {"name": "a", "arguments": "{\"raw\": 1}"}},
            {"function": {"name": "b"}},
        ]})),
        json!({"done": true, "done_reason": "length"}).to_string(),
    ]);
    assert_eq!(
        events,
        vec![
            call("call_0", "a", "{\"raw\": 1}"),
            call("call_1", "b", "{}"),
            finished(FinishReason::Length),
        ]
    );
}

#[test]
fn output_started_waits_for_real_output() {
    let mut d = decoder();
    d.feed(&line(json!({"role": "assistant", "content": ""})))
        .unwrap();
    assert!(!d.output_started());
    d.feed(&line(json!({"thinking": "x"}))).unwrap();
    assert!(d.output_started());
}

#[test]
fn garbage_lines_are_skipped_and_errors_end_the_stream() {
    let mut d = decoder();
    assert_eq!(d.feed("not json").unwrap(), Decoded::More(vec![]));
    assert_eq!(
        d.feed(&line(json!({"content": "hi"}))).unwrap(),
        Decoded::More(vec![text("hi")])
    );
    let err = d.feed(r#"{"error":"model runner has unexpectedly stopped"}"#);
    assert_eq!(
        err,
        Err(BackendError::Http {
            endpoint: "ollama".into(),
            status: 500,
            body: "model runner has unexpectedly stopped".into(),
        })
    );
    let overflow = decoder().feed(r#"{"error":"the input exceeds the context length"}"#);
    assert!(
        matches!(overflow, Err(BackendError::ContextWindowExceeded { ref model, .. }) if model == "qwen"),
        "{overflow:?}"
    );
}

#[test]
fn a_body_ending_before_done_is_stream_closed() {
    let mut d = decoder();
    d.feed(&line(json!({"content": "partial"}))).unwrap();
    assert_eq!(
        d.end_of_stream(),
        Err(BackendError::StreamClosed {
            endpoint: "ollama".into()
        })
    );
}

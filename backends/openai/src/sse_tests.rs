use hearth_backend::{BackendError, BackendEvent, FinishReason, NativeToolCall, Usage};
use hearth_testkit::{
    DONE, chunk_content, chunk_delta, chunk_finish, chunk_reasoning, chunk_reasoning_as,
    chunk_tool_call, chunk_usage,
};
use serde_json::json;

use super::*;

fn decoder() -> Decoder {
    Decoder::new(
        Arc::new(OpenAiEndpoint::new("lan", "http://h/v1")),
        "m",
        None,
    )
}

/// The payload of a builder's `data: ...\n\n` frame.
fn payload(frame: &str) -> &str {
    frame
        .strip_prefix("data: ")
        .and_then(|f| f.strip_suffix("\n\n"))
        .unwrap()
}

/// Feeds frames until `[DONE]`, collecting every event.
fn run(frames: &[String]) -> Vec<BackendEvent> {
    let mut d = decoder();
    let mut events = Vec::new();
    for frame in frames {
        match d.feed(payload(frame)).unwrap() {
            Decoded::More(more) => events.extend(more),
            Decoded::Done(last) => {
                events.extend(last);
                return events;
            }
        }
    }
    panic!("no [DONE] in {frames:?}")
}

fn text(t: &str) -> BackendEvent {
    BackendEvent::Text { text: t.into() }
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

fn finished(reason: FinishReason) -> BackendEvent {
    BackendEvent::Finished { reason }
}

#[test]
fn text_and_both_reasoning_fields_pass_through_in_order() {
    let events = run(&[
        chunk_delta(json!({"role": "assistant", "content": ""})),
        chunk_reasoning("think "),
        chunk_reasoning_as("reasoning", "more"),
        chunk_content("Hi"),
        chunk_delta(json!({"content": null, "tool_calls": null})),
        chunk_finish("stop"),
        DONE.into(),
    ]);
    assert_eq!(
        events,
        vec![
            BackendEvent::Reasoning {
                text: "think ".into()
            },
            BackendEvent::Reasoning {
                text: "more".into()
            },
            text("Hi"),
            finished(FinishReason::Stop),
        ]
    );
}

#[test]
fn parallel_tool_calls_are_assembled_per_index_and_usage_precedes_finished() {
    let events = run(&[
        chunk_tool_call(0, Some("a"), Some("read"), ""),
        chunk_tool_call(1, Some("b"), Some("grep"), "{\"q\""),
        chunk_tool_call(0, None, None, "{\"path\":"),
        chunk_tool_call(1, None, None, ":\"x\"}"),
        chunk_tool_call(0, None, None, "\"a.rs\"}"),
        chunk_finish("tool_calls"),
        chunk_usage(7, 3),
        DONE.into(),
    ]);
    assert_eq!(
        events,
        vec![
            call("a", "read", "{\"path\":\"a.rs\"}"),
            call("b", "grep", "{\"q\":\"x\"}"),
            BackendEvent::Usage {
                usage: Usage {
                    prompt_tokens: 7,
                    completion_tokens: 3,
                    cached_tokens: None
                }
            },
            finished(FinishReason::ToolCalls),
        ]
    );
}

#[test]
fn calls_without_index_or_id_and_repeated_names_are_tolerated() {
    let frame = chunk_delta(json!({"tool_calls": [
        {"function": {"name": "a", "arguments": "{}"}},
        {"id": "", "function": {"name": "b", "arguments": "[]"}},
    ]}));
    let repeat = chunk_delta(json!({"tool_calls": [
        {"index": 0, "id": "zzz", "function": {"name": "a", "arguments": ""}},
    ]}));
    let events = run(&[frame, repeat, DONE.into()]);
    assert_eq!(
        events,
        vec![
            call("zzz", "a", "{}"),
            call("call_1", "b", "[]"),
            finished(FinishReason::ToolCalls),
        ]
    );
}

#[test]
fn every_finish_reason_maps() {
    for (wire, reason) in [
        ("stop", FinishReason::Stop),
        ("length", FinishReason::Length),
        ("tool_calls", FinishReason::ToolCalls),
        ("content_filter", FinishReason::ContentFilter),
        ("weird", FinishReason::Other("weird".into())),
    ] {
        let events = run(&[chunk_content("x"), chunk_finish(wire), DONE.into()]);
        assert_eq!(events, vec![text("x"), finished(reason)], "{wire}");
    }
}

#[test]
fn usage_in_the_finish_chunk_and_cached_tokens_are_read() {
    let both = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}],
        "usage":{"prompt_tokens":5,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":4}}}"#;
    let mut d = decoder();
    assert_eq!(d.feed(both).unwrap(), Decoded::More(vec![]));
    let usage = Usage {
        prompt_tokens: 5,
        completion_tokens: 2,
        cached_tokens: Some(4),
    };
    assert_eq!(
        d.end_of_stream().unwrap(),
        vec![
            BackendEvent::Usage { usage },
            finished(FinishReason::Length)
        ]
    );
}

#[test]
fn end_without_finish_is_stream_closed_and_done_without_finish_is_stop() {
    let mut d = decoder();
    d.feed(payload(&chunk_content("partial"))).unwrap();
    assert_eq!(
        d.end_of_stream(),
        Err(BackendError::StreamClosed {
            endpoint: "lan".into()
        })
    );
    assert_eq!(
        run(&[chunk_content("x"), DONE.into()]),
        vec![text("x"), finished(FinishReason::Stop)]
    );
}

#[test]
fn undecodable_chunks_are_skipped() {
    let mut d = decoder();
    assert_eq!(d.feed("{not json").unwrap(), Decoded::More(vec![]));
    assert_eq!(
        d.feed(payload(&chunk_content("ok"))).unwrap(),
        Decoded::More(vec![text("ok")])
    );
}

#[test]
fn an_error_object_in_the_stream_ends_it() {
    let mut d = decoder();
    let err = d
        .feed(r#"{"error":{"message":"engine died","code":500}}"#)
        .unwrap_err();
    assert_eq!(
        err,
        BackendError::Http {
            endpoint: "lan".into(),
            status: 500,
            body: "engine died".into()
        }
    );
}

#[test]
fn other_choices_are_ignored() {
    let second = r#"{"choices":[{"index":1,"delta":{"content":"other"},"finish_reason":"stop"}]}"#;
    let mut d = decoder();
    assert_eq!(d.feed(second).unwrap(), Decoded::More(vec![]));
    assert!(d.end_of_stream().is_err());
}

#[test]
fn an_empty_finish_reason_is_no_finish_reason() {
    let mut d = decoder();
    let empty = r#"{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":""}]}"#;
    assert_eq!(d.feed(empty).unwrap(), Decoded::More(vec![text("a")]));
    assert!(d.end_of_stream().is_err(), "no finish reason was given");
}

#[test]
fn null_usage_counts_do_not_lose_the_chunk() {
    let mut d = decoder();
    let chunk = r#"{"choices":[{"index":0,"delta":{"content":"kept"},"finish_reason":"stop"}],
        "usage":{"prompt_tokens":null,"completion_tokens":3}}"#;
    assert_eq!(d.feed(chunk).unwrap(), Decoded::More(vec![text("kept")]));
    let usage = Usage {
        prompt_tokens: 0,
        completion_tokens: 3,
        cached_tokens: None,
    };
    assert_eq!(
        d.end_of_stream().unwrap(),
        vec![BackendEvent::Usage { usage }, finished(FinishReason::Stop)]
    );
}

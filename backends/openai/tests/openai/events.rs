//! Every event kind, decoded from real SSE bytes.

use hearth_backend::{BackendEvent, FinishReason, NativeToolCall, Usage};
use hearth_testkit::{
    DONE, FakeServer, Reply, chunk_content, chunk_finish, chunk_reasoning_as, chunk_role,
    chunk_tool_call, chunk_usage,
};

use crate::common::*;

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

#[tokio::test]
async fn text_deltas_then_usage_then_finished() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::text(&["Hel", "lo ", "wörld"]));
    assert_eq!(
        events(&backend(&server)).await,
        vec![
            text("Hel"),
            text("lo "),
            text("wörld"),
            usage(10, 3),
            finished(FinishReason::Stop)
        ]
    );
}

#[tokio::test]
async fn reasoning_content_and_reasoning_fields_both_become_reasoning() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::reasoning_then_text(&["Let me ", "think"], &["42"]));
    server.push(Reply::frames(&[
        chunk_role(),
        chunk_reasoning_as("reasoning", "via openrouter"),
        chunk_content("ok"),
        chunk_finish("stop"),
        DONE.to_string(),
    ]));
    let backend = backend(&server);
    assert_eq!(
        events(&backend).await,
        vec![
            reasoning("Let me "),
            reasoning("think"),
            text("42"),
            usage(10, 3),
            finished(FinishReason::Stop)
        ]
    );
    assert_eq!(
        events(&backend).await,
        vec![
            reasoning("via openrouter"),
            text("ok"),
            finished(FinishReason::Stop)
        ]
    );
}

#[tokio::test]
async fn two_parallel_tool_calls_split_over_many_deltas() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::frames(&[
        chunk_role(),
        chunk_content("Reading both."),
        chunk_tool_call(0, Some("call_a"), Some("read_file"), ""),
        chunk_tool_call(0, None, None, "{\"pa"),
        chunk_tool_call(1, Some("call_b"), Some("grep"), "{\"pattern\""),
        chunk_tool_call(0, None, None, "th\": \"src/"),
        chunk_tool_call(1, None, None, ": \"fn main\"}"),
        chunk_tool_call(0, None, None, "lib.rs\"}"),
        chunk_finish("tool_calls"),
        chunk_usage(30, 12),
        DONE.to_string(),
    ]));
    let call = |id: &str, name: &str, arguments: &str| BackendEvent::ToolCall {
        call: NativeToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        },
    };
    assert_eq!(
        events(&backend(&server)).await,
        vec![
            text("Reading both."),
            call("call_a", "read_file", "{\"path\": \"src/lib.rs\"}"),
            call("call_b", "grep", "{\"pattern\": \"fn main\"}"),
            usage(30, 12),
            finished(FinishReason::ToolCalls),
        ]
    );
}

#[tokio::test]
async fn single_tool_call_builder_round_trips() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::tool_call("c9", "bash", &["{\"cmd\":", "\"ls\"}"]));
    let got = events(&backend(&server)).await;
    assert_eq!(
        got[0],
        BackendEvent::ToolCall {
            call: NativeToolCall {
                id: "c9".into(),
                name: "bash".into(),
                arguments: "{\"cmd\":\"ls\"}".into()
            }
        }
    );
    assert_eq!(got.last(), Some(&finished(FinishReason::ToolCalls)));
}

#[tokio::test]
async fn every_finish_reason_is_mapped_and_last() {
    let server = FakeServer::start().await.unwrap();
    let backend = backend(&server);
    for (wire, reason) in [
        ("stop", FinishReason::Stop),
        ("length", FinishReason::Length),
        ("tool_calls", FinishReason::ToolCalls),
        ("content_filter", FinishReason::ContentFilter),
        ("eos", FinishReason::Stop),
        ("abort", FinishReason::Other("abort".into())),
    ] {
        server.push(Reply::frames(&[
            chunk_content("x"),
            chunk_finish(wire),
            chunk_usage(1, 1),
            DONE.to_string(),
        ]));
        assert_eq!(
            events(&backend).await,
            vec![text("x"), usage(1, 1), finished(reason)],
            "{wire}"
        );
    }
}

#[tokio::test]
async fn usage_in_a_final_chunk_with_empty_choices_and_cached_tokens() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::frames(&[
        chunk_content("x"),
        chunk_finish("stop"),
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":1,\
         \"prompt_tokens_details\":{\"cached_tokens\":96}}}\n\n"
            .to_string(),
        DONE.to_string(),
    ]));
    assert_eq!(
        events(&backend(&server)).await,
        vec![
            text("x"),
            BackendEvent::Usage {
                usage: Usage {
                    prompt_tokens: 100,
                    completion_tokens: 1,
                    cached_tokens: Some(96)
                }
            },
            finished(FinishReason::Stop)
        ]
    );
}

#[tokio::test]
async fn finish_without_done_still_finishes() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::frames(&[chunk_content("x"), chunk_finish("length")]));
    assert_eq!(
        events(&backend(&server)).await,
        vec![text("x"), finished(FinishReason::Length)]
    );
}

#[tokio::test]
async fn undecodable_chunk_is_skipped_and_the_stream_goes_on() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::frames(&[
        chunk_content("before "),
        "data: {\"choices\": [oops\n\n".to_string(),
        ": keep-alive comment\n\n".to_string(),
        chunk_content("after"),
        chunk_finish("stop"),
        DONE.to_string(),
    ]));
    assert_eq!(
        events(&backend(&server)).await,
        vec![text("before "), text("after"), finished(FinishReason::Stop)]
    );
}

#[tokio::test]
async fn a_server_that_ignores_stream_true_still_answers() {
    let server = FakeServer::start().await.unwrap();
    let completion = serde_json::json!({
        "id": "x", "object": "chat.completion", "model": "qwen",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "Let me look.", "reasoning_content": "hmm",
            "tool_calls": [{"id": "c1", "type": "function",
                            "function": {"name": "ls", "arguments": "{}"}}],
        }}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4},
    });
    server.push(Reply::Status {
        code: 200,
        headers: vec![],
        body: completion.to_string(),
    });
    assert_eq!(
        events(&backend(&server)).await,
        vec![
            reasoning("hmm"),
            text("Let me look."),
            BackendEvent::ToolCall {
                call: NativeToolCall {
                    id: "c1".into(),
                    name: "ls".into(),
                    arguments: "{}".into()
                }
            },
            usage(9, 4),
            finished(FinishReason::ToolCalls),
        ]
    );
}

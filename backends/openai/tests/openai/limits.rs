//! A hostile server cannot make hearth buffer without end: a line that never ends, one huge
//! event, or endless valid deltas each end the stream quickly with `StreamTooLarge`.

use std::time::{Duration, Instant};

use hearth_backend::{BackendError, BackendEvent, StreamLimit};
use hearth_testkit::{
    DONE, FakeServer, Reply, Step, chunk_content, chunk_tool_call, ollama_content,
};

use crate::common::*;
use crate::ollama::{native, ollama};

const MIB: usize = 1 << 20;

fn too_large(what: StreamLimit, limit: usize) -> Option<BackendError> {
    Some(BackendError::StreamTooLarge {
        endpoint: "fake".into(),
        what,
        limit,
    })
}

/// `bytes` as 16 KiB writes, then a hang: a stream that never ends on its own. A cap that did
/// not work would show as an idle timeout instead.
fn then_hang(bytes: &[u8]) -> Vec<Step> {
    let mut steps = Step::every(bytes, 16 << 10, None);
    steps.push(Step::Hang);
    steps
}

#[tokio::test]
async fn a_line_that_never_ends_is_refused_at_the_line_cap() {
    let server = FakeServer::start().await.unwrap();
    let mut body = chunk_content("before").into_bytes();
    body.extend_from_slice(b"data: \"");
    body.resize(body.len() + 5 * MIB, b'x');
    server.push(Reply::Sse(then_hang(&body)));
    let started = Instant::now();
    let (events, error) = collect(&backend(&server)).await;
    assert_eq!(events, vec![text("before")]);
    assert_eq!(error, too_large(StreamLimit::Line, 4 * MIB));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(
        server.wait_dropped(1, WAIT).await,
        "the connection was left open"
    );
}

#[tokio::test]
async fn a_20_mb_event_is_refused_quickly() {
    let server = FakeServer::start().await.unwrap();
    // One line per MiB, so the event cap (not the line cap) is what breaks.
    let line = format!("data: {}\n", "y".repeat(MIB - 7));
    let body = line.repeat(20);
    server.push(Reply::Sse(then_hang(body.as_bytes())));
    let started = Instant::now();
    let (events, error) = collect(&backend(&server)).await;
    assert_eq!(events, vec![]);
    assert_eq!(error, too_large(StreamLimit::Event, 8 * MIB));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );

    // The same 20 MB as one line breaks the line cap first.
    let mut body = b"data: ".to_vec();
    body.resize(20 * MIB, b'z');
    server.push(Reply::Sse(then_hang(&body)));
    let (_, error) = collect(&backend(&server)).await;
    assert_eq!(error, too_large(StreamLimit::Line, 4 * MIB));
}

#[tokio::test]
async fn endless_valid_deltas_end_at_the_answer_cap() {
    let server = FakeServer::start().await.unwrap();
    // 2 MiB of 1 KiB deltas against a 1 MiB answer cap (max_tokens 100 → the floor).
    let delta = chunk_content(&"w".repeat(1024));
    let body = delta.repeat(2048);
    server.push(Reply::Sse(then_hang(body.as_bytes())));
    let mut request = request();
    request.max_tokens = Some(100);
    let started = Instant::now();
    let (events, error) = collect_request(&backend(&server), request).await;
    assert_eq!(error, too_large(StreamLimit::Answer, MIB));
    let streamed: usize = events
        .iter()
        .map(|e| match e {
            BackendEvent::Text { text } => text.len(),
            other => panic!("unexpected {other:?}"),
        })
        .sum();
    assert_eq!(streamed, MIB, "everything up to the cap was passed on");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn tool_calls_are_capped_in_number_and_in_arguments() {
    let server = FakeServer::start().await.unwrap();
    let calls: String = (0..200)
        .map(|i| chunk_tool_call(i, Some(&format!("c{i}")), Some("read"), "{}"))
        .collect();
    server.push(Reply::Sse(then_hang(calls.as_bytes())));
    let (_, error) = collect(&backend(&server)).await;
    assert_eq!(error, too_large(StreamLimit::ToolCalls, 128));

    let fragment = "a".repeat(512 << 10);
    let mut frames = chunk_tool_call(0, Some("c"), Some("write"), "{\"t\":\"");
    for _ in 0..20 {
        frames.push_str(&chunk_tool_call(0, None, None, &fragment));
    }
    server.push(Reply::Sse(then_hang(frames.as_bytes())));
    let mut request = request();
    request.max_tokens = Some(10_000_000);
    let (_, error) = collect_request(&backend(&server), request).await;
    assert_eq!(error, too_large(StreamLimit::ToolArguments, 8 * MIB));
}

#[tokio::test]
async fn empty_chunks_do_not_hold_off_the_idle_limit() {
    let server = FakeServer::start().await.unwrap();
    let mut steps = vec![Step::text(&chunk_content("a"))];
    for _ in 0..200 {
        steps.push(Step::Pause(Duration::from_millis(20)));
        steps.push(Step::text("data: {\"choices\":[]}\n\n"));
    }
    steps.push(Step::text(DONE));
    server.push(Reply::Sse(steps));
    let mut endpoint = endpoint_at(&server.base_url());
    endpoint.idle_timeout = Duration::from_millis(300);
    let started = Instant::now();
    let (events, error) = collect(&backend_with(endpoint)).await;
    assert_eq!(events, vec![text("a")]);
    assert_eq!(
        error,
        Some(BackendError::IdleTimeout {
            endpoint: "fake".into(),
            after: Duration::from_millis(300),
        })
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn ollama_lines_are_capped_like_sse() {
    let server = FakeServer::start().await.unwrap();
    let backend = ollama(&server).await;

    let mut body = ollama_content("before").into_bytes();
    body.resize(body.len() + 5 * MIB, b'{');
    server.push(Reply::Ndjson(then_hang(&body)));
    let (events, error) = collect_request(&backend, native(8192)).await;
    assert_eq!(events, vec![text("before")]);
    assert_eq!(error, too_large(StreamLimit::Line, 4 * MIB));

    let line = ollama_content(&"v".repeat(1024));
    server.push(Reply::Ndjson(then_hang(line.repeat(2048).as_bytes())));
    let mut request = native(8192);
    request.max_tokens = Some(1);
    let started = Instant::now();
    let (_, error) = collect_request(&backend, request).await;
    assert_eq!(error, too_large(StreamLimit::Answer, MIB));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_non_streamed_answer_past_the_event_cap_is_refused() {
    let server = FakeServer::start().await.unwrap();
    let content = "q".repeat(9 * MIB);
    let body = serde_json::json!({
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": "stop"}]
    });
    server.push(Reply::Status {
        code: 200,
        headers: vec![],
        body: body.to_string(),
    });
    let (events, error) = collect(&backend(&server)).await;
    assert_eq!(events, vec![]);
    assert_eq!(error, too_large(StreamLimit::Event, 8 * MIB));
}

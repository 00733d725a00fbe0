//! The same SSE bytes, cut anywhere (mid-line, mid-UTF-8), decode to the same events.

use std::time::Duration;

use hearth_testkit::{
    DONE, FakeServer, Reply, Step, chunk_content, chunk_finish, chunk_reasoning, chunk_tool_call,
    chunk_usage,
};

use crate::common::*;

fn body() -> String {
    [
        chunk_reasoning("thinking 🤔 about "),
        chunk_content("héllo "),
        chunk_content("😀 wörld — ✓"),
        chunk_tool_call(0, Some("c1"), Some("edit"), "{\"text\":\"日本"),
        chunk_tool_call(0, None, None, "語 🎉\"}"),
        chunk_finish("tool_calls"),
        chunk_usage(12, 8),
        DONE.to_string(),
    ]
    .concat()
}

async fn decode(server: &FakeServer, steps: Vec<Step>) -> Vec<hearth_backend::BackendEvent> {
    server.push(Reply::Sse(steps));
    events(&backend(server)).await
}

#[tokio::test]
async fn an_emoji_and_a_data_line_cut_across_writes_decode_identically() {
    let server = FakeServer::start().await.unwrap();
    let body = body();
    let whole = decode(&server, vec![Step::text(&body)]).await;
    assert_eq!(whole.len(), 6, "{whole:?}");

    let emoji = body.find('😀').unwrap();
    let pause = Some(Duration::from_millis(20));
    for cuts in [
        vec![emoji + 1],
        vec![emoji + 2, emoji + 3],
        vec![3],                              // inside "data:"
        vec![body.find("\n\n").unwrap() + 1], // between the two newlines ending a frame
        vec![body.find("日").unwrap() + 2, body.find("🎉").unwrap() + 3],
    ] {
        let split = decode(&server, Step::split(body.as_bytes(), &cuts, pause)).await;
        assert_eq!(split, whole, "cut at {cuts:?}");
    }
}

#[tokio::test]
async fn one_byte_writes_decode_identically() {
    let server = FakeServer::start().await.unwrap();
    let body = body();
    let whole = decode(&server, vec![Step::text(&body)]).await;
    let pause = Some(Duration::from_micros(200));
    let bytewise = decode(&server, Step::every(body.as_bytes(), 1, pause)).await;
    assert_eq!(bytewise, whole);
    let sevens = decode(&server, Step::every(body.as_bytes(), 7, pause)).await;
    assert_eq!(sevens, whole);
}

#[tokio::test]
async fn crlf_line_endings_decode_identically() {
    let server = FakeServer::start().await.unwrap();
    let body = body();
    let whole = decode(&server, vec![Step::text(&body)]).await;
    let crlf = body.replace('\n', "\r\n");
    let cut = crlf.find("\r\n").unwrap() + 1; // between \r and \n
    let split = decode(
        &server,
        Step::split(crlf.as_bytes(), &[cut], Some(Duration::from_millis(20))),
    )
    .await;
    assert_eq!(split, whole);
}

//! The fake server driven by a real HTTP client (reqwest) over loopback.

// Helpers outside #[test] fns are test code too: a failed step should panic the test.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use futures::StreamExt;
use hearth_testkit::{DONE, FakeServer, Reply, Step, chunk_content};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(5);

async fn post(server: &FakeServer, body: serde_json::Value) -> reqwest::Response {
    post_with(&reqwest::Client::new(), server, body).await
}

async fn post_with(
    client: &reqwest::Client,
    server: &FakeServer,
    body: serde_json::Value,
) -> reqwest::Response {
    client
        .post(format!("{}/chat/completions", server.base_url()))
        .header("X-Custom", "yes")
        .json(&body)
        .send()
        .await
        .unwrap()
}

fn sse_bytes(reply: &Reply) -> Vec<u8> {
    let Reply::Sse(steps) = reply else {
        panic!("not sse")
    };
    steps
        .iter()
        .flat_map(|s| match s {
            Step::Bytes(b) => b.clone(),
            _ => Vec::new(),
        })
        .collect()
}

#[tokio::test]
async fn streams_the_scripted_bytes_and_records_the_request() {
    let server = FakeServer::start().await.unwrap();
    let reply = Reply::text(&["Hel", "lo"]);
    let expected = sse_bytes(&reply);
    server.push(reply);

    let response = post(&server, json!({"model": "m", "stream": true})).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let body = response.bytes().await.unwrap();
    assert_eq!(body.as_ref(), expected.as_slice());
    assert!(body.ends_with(DONE.as_bytes()));

    let seen = server.wait_requests(1, WAIT).await;
    assert_eq!(seen.len(), 1);
    let written = server.written();
    let steps: Vec<(usize, usize)> = written.iter().map(|w| (w.request, w.step)).collect();
    assert_eq!(steps, (0..6).map(|i| (0, i)).collect::<Vec<_>>());
    assert!(written.windows(2).all(|w| w[0].at <= w[1].at));
    assert_eq!(seen[0].method, "POST");
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(seen[0].header("x-custom"), Some("yes"));
    assert_eq!(seen[0].body, json!({"model": "m", "stream": true}));
    assert_eq!(server.dropped_streams(), 0);
}

#[tokio::test]
async fn pieces_cut_mid_utf8_arrive_separately_and_intact() {
    let server = FakeServer::start().await.unwrap();
    let frame = chunk_content("a😀b");
    let cut = frame.find('😀').unwrap() + 2;
    let steps = Step::split(frame.as_bytes(), &[cut], Some(Duration::from_millis(30)));
    server.push(Reply::Sse(steps));

    let response = post(&server, json!({})).await;
    let mut pieces = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(piece) = stream.next().await {
        pieces.push(piece.unwrap().to_vec());
    }
    assert_eq!(pieces.len(), 2, "the pause keeps the two writes apart");
    assert_eq!(pieces[0], frame.as_bytes()[..cut]);
    assert_eq!(pieces.concat(), frame.as_bytes());
}

#[tokio::test]
async fn empty_queue_unknown_paths_and_models() {
    let server = FakeServer::start().await.unwrap();
    let response = post(&server, json!({})).await;
    assert_eq!(response.status(), 500);
    assert!(response.text().await.unwrap().contains("no reply queued"));

    let client = reqwest::Client::new();
    let missing = client
        .get(format!("{}/nothing?x=1", server.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);

    let models_url = format!("{}/models", server.base_url());
    let default: serde_json::Value = client
        .get(&models_url)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(default, json!({"object": "list", "data": []}));
    let listed = json!({"object": "list", "data": [{"id": "qwen", "max_model_len": 4096}]});
    server.set_models(listed.clone());
    let now: serde_json::Value = client
        .get(&models_url)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(now, listed);

    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(
        paths,
        [
            "/v1/chat/completions",
            "/v1/nothing",
            "/v1/models",
            "/v1/models"
        ]
    );
}

#[tokio::test]
async fn status_replies_carry_headers_and_keep_alive_serves_the_next() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::Status {
        code: 429,
        headers: vec![("Retry-After".into(), "1".into())],
        body: "slow down".into(),
    });
    server.push(Reply::text(&["ok"]));
    let client = reqwest::Client::new();
    let first = post_with(&client, &server, json!({})).await;
    assert_eq!(first.status(), 429);
    assert_eq!(first.headers()["retry-after"], "1");
    assert_eq!(first.text().await.unwrap(), "slow down");
    let second = post_with(&client, &server, json!({})).await;
    assert_eq!(second.status(), 200);
    assert!(second.text().await.unwrap().ends_with(DONE));
    assert_eq!(server.queued(), 0);
    assert_eq!(
        server.connections(),
        1,
        "the second request reused the connection"
    );
}

#[tokio::test]
async fn delayed_reply_holds_back_the_headers() {
    let server = FakeServer::start().await.unwrap();
    let delay = Duration::from_millis(150);
    server.push(Reply::text(&["late"]).after(delay));
    let started = Instant::now();
    let response = post(&server, json!({})).await;
    assert!(started.elapsed() >= delay);
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn abandoning_a_hanging_stream_is_observed() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::Sse(vec![
        Step::text(&chunk_content("x")),
        Step::Hang,
    ]));
    let response = post(&server, json!({})).await;
    let mut stream = response.bytes_stream();
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!(first.as_ref(), chunk_content("x").as_bytes());
    assert!(!server.wait_dropped(1, Duration::from_millis(100)).await);
    drop(stream);
    assert!(server.wait_dropped(1, WAIT).await);
    assert_eq!(server.dropped_streams(), 1);
}

#[tokio::test]
async fn abandoning_during_the_delay_is_observed() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::text(&["never"]).after(Duration::from_secs(30)));
    let client = reqwest::Client::builder()
        .timeout(Duration::from_millis(100))
        .build()
        .unwrap();
    let url = format!("{}/chat/completions", server.base_url());
    assert!(client.post(url).body("{}").send().await.is_err());
    assert!(server.wait_dropped(1, WAIT).await);
}

#[tokio::test]
async fn disconnect_cuts_the_body_and_close_delimited_ends_cleanly() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::Sse(vec![
        Step::text("data: {}\n\n"),
        Step::Disconnect,
    ]));
    server.push(Reply::SseUntilClose(vec![Step::text("data: 1\n\n")]));
    let cut = post(&server, json!({})).await;
    assert!(cut.bytes().await.is_err(), "a chunked body without its end");
    let whole = post(&server, json!({})).await;
    assert_eq!(whole.text().await.unwrap(), "data: 1\n\n");
    assert_eq!(server.dropped_streams(), 0);
}

#[tokio::test]
async fn dropping_the_server_closes_open_streams() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::Sse(vec![Step::text("data: 1\n\n"), Step::Hang]));
    let response = post(&server, json!({})).await;
    let mut stream = response.bytes_stream();
    stream.next().await.unwrap().unwrap();
    drop(server);
    let end = tokio::time::timeout(WAIT, stream.next()).await.unwrap();
    assert!(matches!(end, None | Some(Err(_))));
}

#[tokio::test]
async fn garbage_gets_a_400_and_the_server_keeps_serving() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = FakeServer::start().await.unwrap();
    let mut raw = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    raw.write_all(b"NONSENSE\r\n\r\n").await.unwrap();
    let mut answer = String::new();
    raw.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 400 "), "{answer}");

    server.push(Reply::text(&["still here"]));
    let response = post(&server, json!({})).await;
    assert_eq!(response.status(), 200);
}

#[test]
fn serves_callers_without_a_runtime_and_frees_the_port_on_drop() {
    use std::io::{Read, Write};
    let server = FakeServer::start_blocking().unwrap();
    server.push(Reply::text(&["sync"]));
    let mut raw = std::net::TcpStream::connect(server.addr()).unwrap();
    raw.write_all(
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\
          content-length: 2\r\n\r\n{}",
    )
    .unwrap();
    let mut answer = String::new();
    raw.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    assert!(answer.contains("\"content\":\"sync\""));
    assert!(answer.ends_with("0\r\n\r\n"), "chunked body ended properly");
    assert_eq!(server.requests()[0].body, json!({}));

    let addr = server.addr();
    drop(server);
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "still listening"
    );
}

#[tokio::test]
async fn api_chat_shares_the_queue_and_streams_ndjson_lines() {
    use hearth_testkit::{ollama_content, ollama_done, ollama_thinking, ollama_tool_call};

    let server = FakeServer::start().await.unwrap();
    server.push(Reply::ndjson(&[
        ollama_thinking("hmm"),
        ollama_content("Hi"),
        ollama_tool_call("read", json!({"path": "a"})),
        ollama_done("stop", 12, 3),
    ]));
    let root = server.base_url().trim_end_matches("/v1").to_string();
    let response = reqwest::Client::new()
        .post(format!("{root}/api/chat"))
        .json(&json!({"model": "m", "options": {"num_ctx": 8192}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/x-ndjson");
    let body = response.text().await.unwrap();
    let lines: Vec<serde_json::Value> = body
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0]["message"]["thinking"], "hmm");
    assert_eq!(lines[1]["message"]["content"], "Hi");
    assert_eq!(lines[1]["message"]["role"], "assistant");
    assert_eq!(
        lines[2]["message"]["tool_calls"][0]["function"],
        json!({"name": "read", "arguments": {"path": "a"}})
    );
    assert_eq!(lines[3]["done"], true);
    assert_eq!(lines[3]["done_reason"], "stop");
    assert_eq!(lines[3]["prompt_eval_count"], 12);
    assert_eq!(lines[3]["eval_count"], 3);
    let seen = server.requests();
    assert_eq!(seen[0].path, "/api/chat");
    assert_eq!(seen[0].body["options"]["num_ctx"], 8192);
    assert_eq!(server.queued(), 0);
}

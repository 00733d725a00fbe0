//! Every error kind, provoked for real on loopback.

use std::time::{Duration, Instant};

use hearth_backend::{Backend, BackendError, BackendEvent, FinishReason, TimeoutStage};
use hearth_testkit::{DONE, FakeServer, Reply, Step, chunk_content, chunk_role};

use crate::common::*;

#[tokio::test]
async fn nothing_listening_is_connection_refused() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let backend = backend_with(endpoint_at(&url));
    let refused = BackendError::ConnectionRefused {
        endpoint: "fake".into(),
        url: url.clone(),
    };
    assert_eq!(collect(&backend).await, (vec![], Some(refused.clone())));
    assert_eq!(backend.list_models().await, Err(refused));
}

#[tokio::test]
async fn no_headers_in_time_is_a_first_token_timeout() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::text(&["late"]).after(Duration::from_secs(30)));
    let mut endpoint = endpoint_at(&server.base_url());
    endpoint.first_token_timeout = Duration::from_millis(150);
    let started = Instant::now();
    let (events, error) = collect(&backend_with(endpoint)).await;
    assert!(events.is_empty());
    assert_eq!(
        error,
        Some(BackendError::Timeout {
            endpoint: "fake".into(),
            stage: TimeoutStage::FirstToken,
            after: Duration::from_millis(150),
        })
    );
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(
        server.wait_dropped(1, WAIT).await,
        "the connection was left open"
    );
}

#[tokio::test]
async fn headers_and_a_role_chunk_without_output_are_still_a_first_token_timeout() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::Sse(vec![Step::text(&chunk_role()), Step::Hang]));
    let mut endpoint = endpoint_at(&server.base_url());
    endpoint.first_token_timeout = Duration::from_millis(150);
    endpoint.idle_timeout = Duration::from_secs(30);
    let (events, error) = collect(&backend_with(endpoint)).await;
    assert!(events.is_empty());
    assert!(
        matches!(
            error,
            Some(BackendError::Timeout {
                stage: TimeoutStage::FirstToken,
                ..
            })
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn silence_mid_answer_is_an_idle_timeout_keeping_the_partial_answer() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::Sse(vec![
        Step::text(&chunk_content("partial")),
        Step::Hang,
    ]));
    let mut endpoint = endpoint_at(&server.base_url());
    endpoint.idle_timeout = Duration::from_millis(150);
    let (events, error) = collect(&backend_with(endpoint)).await;
    assert_eq!(events, vec![text("partial")]);
    assert_eq!(
        error,
        Some(BackendError::IdleTimeout {
            endpoint: "fake".into(),
            after: Duration::from_millis(150),
        })
    );
    assert!(
        server.wait_dropped(1, WAIT).await,
        "the connection was left open"
    );
}

#[tokio::test]
async fn slow_but_steady_streams_do_not_trip_the_idle_limit() {
    let server = FakeServer::start().await.unwrap();
    let pause = Step::Pause(Duration::from_millis(100));
    let mut steps = Vec::new();
    for part in ["a", "b", "c", "d"] {
        steps.push(Step::text(&chunk_content(part)));
        steps.push(pause.clone());
    }
    steps.push(Step::text(DONE));
    server.push(Reply::Sse(steps));
    let mut endpoint = endpoint_at(&server.base_url());
    endpoint.idle_timeout = Duration::from_millis(250);
    let started = Instant::now();
    let (events, error) = collect(&backend_with(endpoint)).await;
    assert_eq!(error, None);
    assert_eq!(events.len(), 5);
    assert!(
        started.elapsed() > Duration::from_millis(250),
        "longer than one idle limit"
    );
}

#[tokio::test]
async fn http_500_gives_a_short_snippet_without_the_api_key() {
    let server = FakeServer::start().await.unwrap();
    let body = format!(
        "upstream exploded; your key {KEY} is fine {}",
        "x".repeat(500)
    );
    server.push(Reply::Status {
        code: 500,
        headers: vec![],
        body,
    });
    let mut endpoint = endpoint_at(&server.base_url());
    endpoint.api_key = Some(KEY.into());
    let (events, error) = collect(&backend_with(endpoint)).await;
    assert!(events.is_empty());
    let Some(BackendError::Http {
        endpoint,
        status,
        body,
    }) = error.clone()
    else {
        panic!("not an HTTP error: {error:?}");
    };
    assert_eq!((endpoint.as_str(), status), ("fake", 500));
    assert!(body.starts_with("upstream exploded; your key <redacted> is fine"));
    assert!(
        body.chars().count() <= 300,
        "{} chars",
        body.chars().count()
    );
    let shown = error.unwrap().to_string();
    assert!(!shown.contains(KEY), "{shown}");
}

#[tokio::test]
async fn openai_style_error_bodies_show_their_message() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::error(404, "The model `qwen` does not exist"));
    let (_, error) = collect(&backend(&server)).await;
    assert_eq!(
        error,
        Some(BackendError::Http {
            endpoint: "fake".into(),
            status: 404,
            body: "The model `qwen` does not exist".into(),
        })
    );
}

#[tokio::test]
async fn context_overflow_400_is_context_window_exceeded() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::error(
        400,
        "This model's maximum context length is 4096 tokens. However, you requested 9000 tokens \
         (8000 in the messages, 1000 in the completion).",
    ));
    let (_, error) = collect(&backend(&server)).await;
    assert!(
        matches!(error, Some(BackendError::ContextWindowExceeded {
            ref model, ref detail, prompt_tokens: Some(8000), window: Some(4096)
        }) if model == "qwen" && detail.contains("4096")),
        "{error:?}"
    );
}

fn too_many(headers: &[(&str, &str)]) -> Reply {
    Reply::Status {
        code: 429,
        headers: headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        body: "{\"error\":{\"message\":\"slow down\"}}".into(),
    }
}

#[tokio::test]
async fn rate_limits_are_retried_after_the_wait_the_server_asks() {
    let server = FakeServer::start().await.unwrap();
    server.push(too_many(&[("retry-after-ms", "200")]));
    server.push(too_many(&[("Retry-After", "1")]));
    server.push(Reply::text(&["finally"]));
    let mut endpoint = endpoint_at(&server.base_url());
    endpoint.max_retry_wait = Duration::from_millis(300);
    let started = Instant::now();
    let got = events(&backend_with(endpoint)).await;
    let elapsed = started.elapsed();
    assert_eq!(got[0], text("finally"));
    assert_eq!(
        got.last(),
        Some(&BackendEvent::Finished {
            reason: FinishReason::Stop
        })
    );
    // 200 ms as asked, then 1 s capped to 300 ms.
    assert!(elapsed >= Duration::from_millis(500), "{elapsed:?}");
    // Uncapped it would have taken at least 1.2 s.
    assert!(elapsed < Duration::from_millis(1100), "{elapsed:?}");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn rate_limits_beyond_the_retry_budget_are_rate_limited() {
    let server = FakeServer::start().await.unwrap();
    for _ in 0..3 {
        server.push(too_many(&[("retry-after-ms", "10")]));
    }
    server.push(Reply::text(&["never reached"]));
    let mut endpoint = endpoint_at(&server.base_url());
    endpoint.max_rate_limit_retries = 2;
    let (events, error) = collect(&backend_with(endpoint)).await;
    assert!(events.is_empty());
    assert_eq!(
        error,
        Some(BackendError::RateLimited {
            endpoint: "fake".into(),
            retry_after: Some(Duration::from_millis(10)),
        })
    );
    assert_eq!(server.requests().len(), 3);
    assert_eq!(server.queued(), 1);
}

#[tokio::test]
async fn a_body_ending_without_finish_or_done_is_stream_closed() {
    let server = FakeServer::start().await.unwrap();
    let partial = || {
        vec![
            Step::text(&chunk_role()),
            Step::text(&chunk_content("half")),
        ]
    };
    server.push(Reply::Sse(partial()));
    server.push(Reply::SseUntilClose(partial()));
    let mut cut = partial();
    cut.push(Step::Disconnect);
    server.push(Reply::Sse(cut));
    let backend = backend(&server);
    let closed = BackendError::StreamClosed {
        endpoint: "fake".into(),
    };
    for framing in ["chunked", "close-delimited", "cut off"] {
        let (events, error) = collect(&backend).await;
        assert_eq!(events, vec![text("half")], "{framing}");
        assert_eq!(error, Some(closed.clone()), "{framing}");
    }
}

#[tokio::test]
async fn an_error_object_inside_the_stream_ends_it_with_that_error() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::frames(&[
        chunk_content("so far"),
        "data: {\"error\":{\"message\":\"CUDA out of memory\",\"code\":503}}\n\n".to_string(),
    ]));
    let (events, error) = collect(&backend(&server)).await;
    assert_eq!(events, vec![text("so far")]);
    assert_eq!(
        error,
        Some(BackendError::Http {
            endpoint: "fake".into(),
            status: 503,
            body: "CUDA out of memory".into(),
        })
    );
}

// Linux drops SYNs to a full accept queue; other kernels may answer with a reset instead.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_connection_that_never_completes_is_a_connect_timeout() {
    // A listener whose accept queue is full and never drained: the kernel drops further SYNs,
    // so the next connect hangs until the client gives up.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(0).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut fillers = Vec::new();
    for _ in 0..4 {
        let connect = tokio::net::TcpStream::connect(addr);
        match tokio::time::timeout(Duration::from_millis(100), connect).await {
            Ok(Ok(stream)) => fillers.push(stream),
            _ => break,
        }
    }
    let mut endpoint = endpoint_at(&format!("http://{addr}/v1"));
    endpoint.connect_timeout = Duration::from_millis(200);
    let (events, error) = collect(&backend_with(endpoint)).await;
    assert!(events.is_empty());
    assert_eq!(
        error,
        Some(BackendError::Timeout {
            endpoint: "fake".into(),
            stage: TimeoutStage::Connect,
            after: Duration::from_millis(200),
        })
    );
    drop((fillers, listener));
}

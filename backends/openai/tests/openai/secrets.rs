//! No secret the endpoint holds (API key, header values, a password in the base URL) reaches
//! an error message or a trace log, whatever the server echoes back.

use std::sync::{Arc, Mutex};

use hearth_backend::{Backend, BackendError};
use hearth_openai::OpenAiEndpoint;
use hearth_testkit::{DONE, FakeServer, Reply, Step, chunk_content, data_frame};
use serde_json::json;

use crate::common::*;

const HEADER_SECRET: &str = "hdr-secret-0123456789";
const PASSWORD: &str = "pw-secret-987654";

/// An endpoint on `server` holding every kind of secret.
fn secret_endpoint(server: &FakeServer) -> OpenAiEndpoint {
    let base = server
        .base_url()
        .replacen("http://", &format!("http://alice:{PASSWORD}@"), 1);
    let mut endpoint = endpoint_at(&base);
    endpoint.api_key = Some(KEY.into());
    endpoint.headers = vec![("X-Api-Token".into(), HEADER_SECRET.into())];
    endpoint
}

fn assert_clean(shown: &str) {
    for secret in [KEY, HEADER_SECRET, PASSWORD, "alice:"] {
        assert!(!shown.contains(secret), "`{secret}` leaked: {shown}");
    }
}

#[tokio::test]
async fn a_401_echoing_the_key_and_a_header_value_is_redacted() {
    let server = FakeServer::start().await.unwrap();
    let echo = format!("bad credentials: Bearer {KEY}, X-Api-Token: {HEADER_SECRET}");
    server.push(Reply::error(401, &echo));
    let (_, error) = collect(&backend_with(secret_endpoint(&server))).await;
    let Some(BackendError::Http { status, body, .. }) = &error else {
        panic!("not an HTTP error: {error:?}");
    };
    assert_eq!(*status, 401);
    assert_eq!(
        body,
        "bad credentials: Bearer <redacted>, X-Api-Token: <redacted>"
    );
    assert_clean(&format!("{error:?} {}", error.clone().unwrap()));
    let seen = server.requests();
    assert_eq!(
        seen[0].header("x-api-token"),
        Some(HEADER_SECRET),
        "still sent"
    );
}

#[tokio::test]
async fn an_error_event_in_the_stream_is_redacted() {
    let server = FakeServer::start().await.unwrap();
    let error =
        json!({"error": {"message": format!("key {KEY} revoked ({HEADER_SECRET})"), "code": 403}});
    server.push(Reply::Sse(vec![
        Step::text(&chunk_content("a")),
        Step::text(&data_frame(&error)),
    ]));
    let (_, error) = collect(&backend_with(secret_endpoint(&server))).await;
    let Some(BackendError::Http {
        status: 403, body, ..
    }) = &error
    else {
        panic!("not the in-stream error: {error:?}");
    };
    assert_eq!(body, "key <redacted> revoked (<redacted>)");
}

#[tokio::test]
async fn a_password_in_the_base_url_never_shows_in_an_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let base = format!("http://alice:{PASSWORD}@127.0.0.1:{port}/v1");
    let backend = backend_with(endpoint_at(&base));
    let (_, error) = collect(&backend).await;
    assert_eq!(
        error,
        Some(BackendError::ConnectionRefused {
            endpoint: "fake".into(),
            url: format!("http://***@127.0.0.1:{port}/v1"),
        })
    );
    let listed = backend.list_models().await;
    assert_clean(&format!("{listed:?}"));

    // A model list that is not one quotes its URL: without the user info.
    let server = FakeServer::start().await.unwrap();
    server.set_models(json!("not a list"));
    let listed = backend_with(secret_endpoint(&server)).list_models().await;
    let Err(BackendError::Transport { message, .. }) = &listed else {
        panic!("not a transport error: {listed:?}");
    };
    assert!(message.contains("http://***@127.0.0.1"), "{message}");
    assert_clean(message);
    assert_clean(&format!("{:?}", secret_endpoint(&server)));
}

/// Every event and span field recorded at any level, as text.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<String>>);

impl tracing::field::Visit for Capture {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let mut text = self.0.lock().unwrap();
        text.push_str(&format!("{}={value:?}\n", field.name()));
    }
}

impl tracing::Subscriber for Capture {
    fn register_callsite(
        &self,
        _: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::sometimes()
    }
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        span.record(&mut self.clone());
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        values.record(&mut self.clone());
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        event.record(&mut self.clone());
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[tokio::test]
async fn trace_logs_of_frames_carry_no_secret() {
    let server = FakeServer::start().await.unwrap();
    let echoed = format!("{KEY} {HEADER_SECRET} http://alice:{PASSWORD}@h/");
    server.push(Reply::Sse(vec![
        Step::text(&chunk_content(&echoed)),
        Step::text("data: {\"choices\": \"sk-test-0123456789abcdef\"}\n\n"),
        Step::text(&data_frame(&json!({"choices": [{"index": 0, "delta": {},
                                                    "finish_reason": "stop"}]}))),
        Step::text(DONE),
    ]));
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    let (events, error) = collect(&backend_with(secret_endpoint(&server))).await;
    assert_eq!(error, None);
    assert_eq!(
        events[0],
        text(&echoed),
        "the answer itself is the model's, untouched"
    );
    let logged = capture.0.lock().unwrap().clone();
    assert!(logged.contains("payload="), "nothing traced: {logged}");
    assert!(logged.contains("<redacted>"), "{logged}");
    assert_clean(&logged);
}

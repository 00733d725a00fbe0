use std::time::Duration;

use futures::StreamExt;
use hearth_backend::{Backend, BackendError, BackendEvent, CompletionRequest, Message};
use hearth_openai::{OpenAiBackend, OpenAiEndpoint};
use hearth_testkit::FakeServer;
use tokio_util::sync::CancellationToken;

/// Long enough for anything the fake server does on purpose to finish.
pub const WAIT: Duration = Duration::from_secs(5);

pub const KEY: &str = "sk-test-0123456789abcdef";

/// An endpoint at `base_url` with short limits, so failure paths take milliseconds.
pub fn endpoint_at(base_url: &str) -> OpenAiEndpoint {
    let mut endpoint = OpenAiEndpoint::new("fake", base_url);
    endpoint.connect_timeout = Duration::from_secs(2);
    endpoint.first_token_timeout = Duration::from_secs(3);
    endpoint.idle_timeout = Duration::from_secs(3);
    endpoint.max_retry_wait = Duration::from_secs(2);
    endpoint
}

pub fn backend_with(endpoint: OpenAiEndpoint) -> OpenAiBackend {
    OpenAiBackend::new(endpoint).unwrap()
}

pub fn backend(server: &FakeServer) -> OpenAiBackend {
    backend_with(endpoint_at(&server.base_url()))
}

pub fn request() -> CompletionRequest {
    CompletionRequest::new("qwen", vec![Message::user("hi")])
}

/// Every event of one stream, and the error that ended it, if any.
pub async fn collect(backend: &OpenAiBackend) -> (Vec<BackendEvent>, Option<BackendError>) {
    collect_request(backend, request()).await
}

pub async fn collect_request(
    backend: &OpenAiBackend,
    request: CompletionRequest,
) -> (Vec<BackendEvent>, Option<BackendError>) {
    let mut stream = backend.stream(request, CancellationToken::new());
    let mut events = Vec::new();
    let mut error = None;
    tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(item) = stream.next().await {
            match item {
                Ok(event) => events.push(event),
                Err(err) => {
                    assert!(error.is_none(), "a second error after {error:?}");
                    error = Some(err);
                }
            }
        }
    })
    .await
    .expect("the stream did not end");
    (events, error)
}

/// The events of a stream that must succeed.
pub async fn events(backend: &OpenAiBackend) -> Vec<BackendEvent> {
    let (events, error) = collect(backend).await;
    assert_eq!(error, None, "events so far: {events:?}");
    events
}

pub fn text(t: &str) -> BackendEvent {
    BackendEvent::Text { text: t.into() }
}

pub fn reasoning(t: &str) -> BackendEvent {
    BackendEvent::Reasoning { text: t.into() }
}

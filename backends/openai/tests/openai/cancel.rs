//! Cancelling or dropping a stream closes its HTTP connection; a cancelled stream just ends.

use std::time::Duration;

use futures::StreamExt;
use hearth_backend::Backend;
use hearth_testkit::{FakeServer, Reply, Step, chunk_content};
use tokio_util::sync::CancellationToken;

use crate::common::*;

fn hanging_after_one_delta() -> Reply {
    Reply::Sse(vec![Step::text(&chunk_content("first")), Step::Hang])
}

#[tokio::test]
async fn cancelling_mid_stream_ends_it_quietly_and_closes_the_connection() {
    let server = FakeServer::start().await.unwrap();
    server.push(hanging_after_one_delta());
    let backend = backend(&server);
    let cancel = CancellationToken::new();
    let mut stream = backend.stream(request(), cancel.clone());
    assert_eq!(stream.next().await, Some(Ok(text("first"))));
    cancel.cancel();
    let end = tokio::time::timeout(WAIT, stream.next()).await.unwrap();
    assert_eq!(
        end, None,
        "a cancelled stream ends without error or Finished"
    );
    assert!(
        server.wait_dropped(1, WAIT).await,
        "the server never saw the close"
    );
    drop(stream);
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection() {
    let server = FakeServer::start().await.unwrap();
    server.push(hanging_after_one_delta());
    let backend = backend(&server);
    let mut stream = backend.stream(request(), CancellationToken::new());
    assert_eq!(stream.next().await, Some(Ok(text("first"))));
    assert!(!server.wait_dropped(1, Duration::from_millis(100)).await);
    drop(stream);
    assert!(
        server.wait_dropped(1, WAIT).await,
        "the server never saw the close"
    );
}

#[tokio::test]
async fn cancelling_before_the_response_ends_the_stream_and_the_request() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::text(&["late"]).after(Duration::from_secs(30)));
    let backend = backend(&server);
    let cancel = CancellationToken::new();
    let mut stream = backend.stream(request(), cancel.clone());
    let pending = tokio::spawn(async move { stream.next().await });
    server.wait_requests(1, WAIT).await;
    cancel.cancel();
    let end = tokio::time::timeout(WAIT, pending).await.unwrap().unwrap();
    assert_eq!(end, None);
    assert!(
        server.wait_dropped(1, WAIT).await,
        "the server never saw the close"
    );
}

#[tokio::test]
async fn cancelling_during_a_rate_limit_wait_ends_at_once() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::Status {
        code: 429,
        headers: vec![("retry-after".into(), "30".into())],
        body: String::new(),
    });
    let mut endpoint = endpoint_at(&server.base_url());
    endpoint.max_retry_wait = Duration::from_secs(30);
    let backend = backend_with(endpoint);
    let cancel = CancellationToken::new();
    let mut stream = backend.stream(request(), cancel.clone());
    let pending = tokio::spawn(async move { stream.next().await });
    server.wait_requests(1, WAIT).await;
    cancel.cancel();
    let end = tokio::time::timeout(WAIT, pending).await.unwrap().unwrap();
    assert_eq!(end, None);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_token_cancelled_up_front_sends_nothing() {
    let server = FakeServer::start().await.unwrap();
    let backend = backend(&server);
    let cancel = CancellationToken::new();
    cancel.cancel();
    let mut stream = backend.stream(request(), cancel);
    assert_eq!(stream.next().await, None);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(server.requests().is_empty());
}

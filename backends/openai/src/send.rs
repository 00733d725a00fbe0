//! Sending one chat request: the POST, 429 retries with backoff, mapping a non-2xx answer to
//! its error. Shared by the SSE (`/v1/chat/completions`) and NDJSON (`/api/chat`) paths.

use std::time::Duration;

use bytes::Bytes;
use hearth_backend::{BackendError, TimeoutStage};
use reqwest::header::{CONTENT_TYPE, HeaderValue};
use tokio::time::Instant;

use crate::errors;
use crate::shared::Shared;

/// Posts `body` (JSON) to `url` until it gets a 2xx, retrying 429s before anything was
/// streamed. Returns the response and when the successful attempt was sent (the first-token
/// clock starts there). `model` names the model in a context-overflow error.
pub(crate) async fn open(
    shared: &Shared,
    url: &str,
    body: Bytes,
    model: &str,
) -> Result<(reqwest::Response, Instant), BackendError> {
    let endpoint = &shared.endpoint;
    let mut attempt = 0;
    loop {
        let started = Instant::now();
        let send = shared
            .client
            .post(url)
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(body.clone())
            .send();
        let response = match tokio::time::timeout(endpoint.first_token_timeout, send).await {
            Err(_elapsed) => return Err(silence(shared, false)),
            Ok(Err(err)) => return Err(errors::send(endpoint, &err)),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status.is_success() {
            return Ok((response, started));
        }
        if status == reqwest::StatusCode::TOO_MANY_REQUESTS {
            let asked = errors::retry_after(response.headers());
            if attempt >= endpoint.max_rate_limit_retries {
                return Err(BackendError::RateLimited {
                    endpoint: endpoint.name.clone(),
                    retry_after: asked,
                });
            }
            let wait = asked
                .unwrap_or_else(|| backoff(attempt))
                .min(endpoint.max_retry_wait);
            attempt += 1;
            tracing::warn!(
                attempt,
                wait_ms = wait.as_millis(),
                "rate limited; retrying"
            );
            drop(response);
            tokio::time::sleep(wait).await;
            continue;
        }
        let text = read_error_body(response, endpoint.idle_timeout).await;
        return Err(errors::http(endpoint, model, status.as_u16(), &text));
    }
}

/// Wait before retry `attempt` (0-based) when the server did not say: 1 s, 2 s, 4 s, …
fn backoff(attempt: u32) -> Duration {
    Duration::from_secs(1u64 << attempt.min(16))
}

/// Most of an error body hearth reads: the message, and the context-overflow markers and
/// counts it is searched for, sit in its first few hundred bytes.
const ERROR_BODY_CAP: usize = 64 << 10;

/// The body of an error response (its first [`ERROR_BODY_CAP`] bytes), or an empty string
/// when it does not arrive in time.
pub(crate) async fn read_error_body(response: reqwest::Response, limit: Duration) -> String {
    read_body(response, limit, ERROR_BODY_CAP).await
}

/// At most `cap` bytes of `response`'s body, as text (invalid UTF-8 replaced), or an empty
/// string when it does not arrive within `limit`. A longer body is cut at the cap (a JSON body
/// then fails to parse, which callers handle): reading stops there, so a body without end
/// costs no more.
pub(crate) async fn read_body(response: reqwest::Response, limit: Duration, cap: usize) -> String {
    match tokio::time::timeout(limit, read_capped(response, cap)).await {
        Ok(Ok((text, _cut))) => text,
        _ => String::new(),
    }
}

/// At most `cap` bytes of `response`'s body as text (invalid UTF-8 replaced), and whether
/// more followed.
pub(crate) async fn read_capped(
    mut response: reqwest::Response,
    cap: usize,
) -> Result<(String, bool), reqwest::Error> {
    let mut body = Vec::new();
    let mut cut = false;
    while let Some(chunk) = response.chunk().await? {
        let room = cap - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            cut = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    Ok((String::from_utf8_lossy(&body).into_owned(), cut))
}

/// The error for a wait that ran out: before any output, or mid-answer.
pub(crate) fn silence(shared: &Shared, output_started: bool) -> BackendError {
    let endpoint = &shared.endpoint;
    if output_started {
        BackendError::IdleTimeout {
            endpoint: endpoint.name.clone(),
            after: endpoint.idle_timeout,
        }
    } else {
        BackendError::Timeout {
            endpoint: endpoint.name.clone(),
            stage: TimeoutStage::FirstToken,
            after: endpoint.first_token_timeout,
        }
    }
}

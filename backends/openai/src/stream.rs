//! One streamed completion: send the request (retrying 429s), then read SSE events under the
//! first-token and idle limits until `[DONE]`, the end of the body, an error, or cancellation.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use hearth_backend::{BackendError, BackendEvent, CompletionRequest, EventStream, TimeoutStage};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::backend::Shared;
use crate::errors;
use crate::request::chat_body;
use crate::sse::{Decoded, Decoder};

/// How long to wait for the end of the body after `[DONE]`.
const DRAIN_AFTER_DONE: Duration = Duration::from_millis(100);

/// Streams one completion. Cancelling `cancel` or dropping the stream drops the HTTP response,
/// which closes its connection; a cancelled stream just ends, with neither error nor `Finished`.
pub(crate) fn completion(
    shared: Arc<Shared>,
    request: CompletionRequest,
    cancel: CancellationToken,
) -> EventStream {
    let span = tracing::info_span!(
        "provider.request",
        model = %request.model,
        endpoint = %shared.endpoint.name,
    );
    let events = async_stream::stream! {
        let opened = tokio::select! {
            biased;
            () = cancel.cancelled() => {
                tracing::debug!("cancelled before the response");
                return;
            }
            opened = open(&shared, &request) => opened,
        };
        let (response, started) = match opened {
            Ok(opened) => opened,
            Err(err) => {
                yield Err(err);
                return;
            }
        };
        if is_json(&response) {
            // The server ignored `stream: true` and sent the whole answer at once.
            let deadline = started + shared.endpoint.first_token_timeout;
            for item in whole_answer(&shared, response, &request.model, deadline, &cancel).await {
                yield item;
            }
            return;
        }
        let mut frames = response.bytes_stream().eventsource();
        let mut decoder = Decoder::new(shared.endpoint.clone(), &request.model);
        let first_deadline = started + shared.endpoint.first_token_timeout;
        loop {
            let next = next_decoded(&mut frames, &mut decoder, &shared, first_deadline, &cancel);
            let Some(decoded) = next.await else {
                tracing::debug!("cancelled mid-stream");
                return;
            };
            match decoded {
                Err(err) => {
                    tracing::debug!(%err, "stream failed");
                    yield Err(err);
                    return;
                }
                Ok(Decoded::More(events)) => {
                    for event in events {
                        yield Ok(event);
                    }
                }
                Ok(Decoded::Done(events)) => {
                    tracing::debug!("stream finished");
                    for event in events {
                        yield Ok(event);
                    }
                    // Reading the body to its end (the chunked terminator after `[DONE]`)
                    // returns the connection to the pool: the next request skips a new TCP and
                    // TLS handshake. Bounded, for servers that keep the body open.
                    let rest = async { while frames.next().await.is_some() {} };
                    let _ = tokio::time::timeout(DRAIN_AFTER_DONE, rest).await;
                    return;
                }
            }
        }
    };
    Box::pin(InSpan {
        span,
        inner: Box::pin(events),
    })
}

/// Waits for the next SSE frame under the limit that applies now (first token, then idle) and
/// decodes it. `None` when `cancel` fired.
async fn next_decoded<S>(
    frames: &mut S,
    decoder: &mut Decoder,
    shared: &Shared,
    first_deadline: Instant,
    cancel: &CancellationToken,
) -> Option<Result<Decoded, BackendError>>
where
    S: Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Unpin,
{
    let deadline = if decoder.output_started() {
        Instant::now() + shared.endpoint.idle_timeout
    } else {
        first_deadline
    };
    let next = tokio::select! {
        biased;
        () = cancel.cancelled() => return None,
        next = tokio::time::timeout_at(deadline, frames.next()) => next,
    };
    Some(match next {
        Err(_elapsed) => Err(silence(shared, decoder.output_started())),
        Ok(None) => decoder.end_of_stream().map(Decoded::Done),
        Ok(Some(Err(err))) => {
            // A body that breaks off after the finish reason still completed the answer.
            tracing::warn!(%err, "the SSE body broke off");
            decoder.end_of_stream().map(Decoded::Done)
        }
        Ok(Some(Ok(frame))) => {
            tracing::trace!(data = %frame.data, "sse frame");
            decoder.feed(&frame.data)
        }
    })
}

fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"))
}

/// Reads and decodes a non-streamed `chat.completion` into the items the stream yields: its
/// events, or one error. Nothing when `cancel` fired.
async fn whole_answer(
    shared: &Shared,
    response: reqwest::Response,
    model: &str,
    deadline: Instant,
    cancel: &CancellationToken,
) -> Vec<Item> {
    let text = tokio::select! {
        biased;
        () = cancel.cancelled() => return Vec::new(),
        text = tokio::time::timeout_at(deadline, response.text()) => text,
    };
    let text = match text {
        Err(_elapsed) => return vec![Err(silence(shared, false))],
        Ok(Err(err)) => return vec![Err(errors::transport(&shared.endpoint, &err))],
        Ok(Ok(text)) => text,
    };
    tracing::trace!(body = %text, "non-streamed answer");
    let mut decoder = Decoder::new(shared.endpoint.clone(), model);
    let events = decoder.feed(&text).and_then(|decoded| match decoded {
        Decoded::Done(events) => Ok(events),
        Decoded::More(mut events) => {
            events.extend(decoder.end_of_stream()?);
            Ok(events)
        }
    });
    match events {
        Ok(events) => events.into_iter().map(Ok).collect(),
        Err(err) => vec![Err(err)],
    }
}

/// Sends the request until it gets a 2xx, retrying 429s before anything was streamed. Returns
/// the response and when the successful attempt was sent (the first-token clock starts there).
async fn open(
    shared: &Shared,
    request: &CompletionRequest,
) -> Result<(reqwest::Response, Instant), BackendError> {
    let endpoint = &shared.endpoint;
    let body = chat_body(request);
    tracing::debug!(
        messages = request.messages.len(),
        tools = request.tools.len(),
        "sending chat completion"
    );
    tracing::trace!(body = %serde_json::to_string(&body).unwrap_or_default(), "request body");
    let mut attempt = 0;
    loop {
        let started = Instant::now();
        let send = shared.client.post(&shared.chat_url).json(&body).send();
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
        return Err(errors::http(
            endpoint,
            &request.model,
            status.as_u16(),
            &text,
        ));
    }
}

/// Wait before retry `attempt` (0-based) when the server did not say: 1 s, 2 s, 4 s, …
fn backoff(attempt: u32) -> Duration {
    Duration::from_secs(1u64 << attempt.min(16))
}

/// The body of an error response, or an empty string when it does not arrive in time.
pub(crate) async fn read_error_body(response: reqwest::Response, limit: Duration) -> String {
    match tokio::time::timeout(limit, response.text()).await {
        Ok(Ok(text)) => text,
        _ => String::new(),
    }
}

/// The error for a wait that ran out: before any output, or mid-answer.
fn silence(shared: &Shared, output_started: bool) -> BackendError {
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

type Item = Result<BackendEvent, BackendError>;

/// Enters the request's span around every poll, so everything the stream logs sits under
/// `provider.request{model}` (a span cannot be held across the generator's awaits).
struct InSpan {
    span: tracing::Span,
    inner: Pin<Box<dyn Stream<Item = Item> + Send>>,
}

impl Stream for InSpan {
    type Item = Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Item>> {
        let this = self.get_mut();
        let _entered = this.span.enter();
        this.inner.as_mut().poll_next(cx)
    }
}

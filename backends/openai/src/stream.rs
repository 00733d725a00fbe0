//! One streamed completion: send the request (retrying 429s), then read payloads under the
//! first-token and idle limits until the end marker, the end of the body, an error, or
//! cancellation. The wire format (OpenAI SSE or Ollama NDJSON) is chosen per request by
//! [`crate::route::Route`]; everything else here is shared, the caps of [`crate::limits`]
//! included: a body that breaks one ends the stream with `StreamTooLarge`.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{Stream, StreamExt};
use hearth_backend::{BackendError, BackendEvent, CompletionRequest, EventStream, StreamLimit};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::body::{BodyError, payloads};
use crate::decode::{Decode, Decoded};
use crate::errors;
use crate::limits::{Breach, MAX_EVENT};
use crate::ndjson::NdjsonFramer;
use crate::redact::redact;
use crate::route::{Route, Wire};
use crate::send::{open, read_capped, silence};
use crate::shared::Shared;
use crate::sse_frame::SseFramer;
use crate::{ollama_decode, sse};

/// How long to wait for the end of the body after the end marker.
const DRAIN_AFTER_DONE: Duration = Duration::from_millis(100);

/// The payloads of a response body (SSE `data` or NDJSON lines); an `Err` is the body
/// breaking off or breaking a limit.
type Payloads = Pin<Box<dyn Stream<Item = Result<String, BodyError>> + Send>>;

/// Streams one completion. Cancelling `cancel` or dropping the stream drops the HTTP response,
/// which closes its connection; a cancelled stream just ends, with neither error nor `Finished`.
pub(crate) fn completion(
    shared: Arc<Shared>,
    request: CompletionRequest,
    cancel: CancellationToken,
) -> EventStream {
    let route = Route::for_request(&shared, &request);
    let span = tracing::info_span!(
        "provider.request",
        model = %request.model,
        endpoint = %shared.endpoint.name,
        api = route.wire.name(),
    );
    let events = async_stream::stream! {
        let opened = tokio::select! {
            biased;
            () = cancel.cancelled() => {
                tracing::debug!("cancelled before the response");
                return;
            }
            opened = send(&shared, &route, &request) => opened,
        };
        let (response, started) = match opened {
            Ok(opened) => opened,
            Err(err) => {
                yield Err(err);
                return;
            }
        };
        let first_deadline = started + shared.endpoint.first_token_timeout;
        let reader = reader(route.wire, response, &shared, &request);
        let (mut payloads, mut decoder) = match reader {
            Reader::Streamed { payloads, decoder } => (payloads, decoder),
            Reader::Whole(response) => {
                // The server ignored `stream: true` and sent the whole answer at once.
                let answer = whole_answer(&shared, response, &request, first_deadline, &cancel);
                for item in answer.await {
                    yield item;
                }
                return;
            }
        };
        let mut clock = Clock::new(first_deadline, decoder.as_ref());
        loop {
            let deadline = clock.deadline(shared.endpoint.idle_timeout);
            let next = next_decoded(&mut payloads, decoder.as_mut(), &shared, deadline, &cancel);
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
                    clock.update(decoder.as_ref());
                    for event in events {
                        yield Ok(event);
                    }
                }
                Ok(Decoded::Done(events)) => {
                    tracing::debug!("stream finished");
                    for event in events {
                        yield Ok(event);
                    }
                    // Reading the body to its end (the chunked terminator after the end
                    // marker) returns the connection to the pool: the next request skips a new
                    // TCP and TLS handshake. Bounded, for servers that keep the body open.
                    let rest = async { while payloads.next().await.is_some() {} };
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

/// Serializes the body for `route` and sends it (see [`open`]).
async fn send(
    shared: &Shared,
    route: &Route,
    request: &CompletionRequest,
) -> Result<(reqwest::Response, Instant), BackendError> {
    let body = route.body(request)?;
    tracing::debug!(
        url = %redact(&shared.endpoint, &route.url),
        messages = request.messages.len(),
        tools = request.tools.len(),
        context_window = request.context_window,
        "sending chat request"
    );
    tracing::trace!(body = %String::from_utf8_lossy(&body), "request body");
    open(shared, &route.url, body, &request.model).await
}

/// How a successful response is read.
enum Reader {
    /// Payload by payload, through the decoder of its wire format.
    Streamed {
        payloads: Payloads,
        decoder: Box<dyn Decode>,
    },
    /// One non-streamed `chat.completion` (OpenAI path only).
    Whole(reqwest::Response),
}

fn reader(
    wire: Wire,
    response: reqwest::Response,
    shared: &Shared,
    request: &CompletionRequest,
) -> Reader {
    let endpoint = shared.endpoint.clone();
    let (model, max_tokens) = (request.model.as_str(), request.max_tokens);
    match wire {
        Wire::OpenAi if is_json(&response) => Reader::Whole(response),
        Wire::OpenAi => Reader::Streamed {
            payloads: Box::pin(payloads(response.bytes_stream(), SseFramer::new())),
            decoder: Box::new(sse::Decoder::new(endpoint, model, max_tokens)),
        },
        // Ollama streams NDJSON whatever the content type says; a non-streamed answer is one
        // line, which the same decoder reads.
        Wire::OllamaNative { .. } => Reader::Streamed {
            payloads: Box::pin(payloads(response.bytes_stream(), NdjsonFramer::new())),
            decoder: Box::new(ollama_decode::Decoder::new(endpoint, model, max_tokens)),
        },
    }
}

/// When the model last made progress, which the wait for the next payload counts from.
struct Clock {
    first_deadline: Instant,
    mark: (bool, usize),
    at: Instant,
}

impl Clock {
    fn new(first_deadline: Instant, decoder: &dyn Decode) -> Self {
        Self {
            first_deadline,
            mark: (decoder.output_started(), decoder.progress()),
            at: Instant::now(),
        }
    }

    /// Notes a decoded payload: progress when output started or the answer grew.
    fn update(&mut self, decoder: &dyn Decode) {
        let mark = (decoder.output_started(), decoder.progress());
        if mark != self.mark {
            self.mark = mark;
            self.at = Instant::now();
        }
    }

    /// The first-token deadline until output starts; then the idle limit past the last
    /// progress (see [`Decode::progress`]).
    fn deadline(&self, idle: Duration) -> Instant {
        if self.mark.0 {
            self.at + idle
        } else {
            self.first_deadline
        }
    }
}

/// Waits for the next payload until `deadline` and decodes it. `None` when `cancel` fired.
async fn next_decoded(
    payloads: &mut Payloads,
    decoder: &mut dyn Decode,
    shared: &Shared,
    deadline: Instant,
    cancel: &CancellationToken,
) -> Option<Result<Decoded, BackendError>> {
    let next = tokio::select! {
        biased;
        () = cancel.cancelled() => return None,
        next = tokio::time::timeout_at(deadline, payloads.next()) => next,
    };
    Some(match next {
        Err(_elapsed) => Err(silence(shared, decoder.output_started())),
        Ok(None) => decoder.end_of_stream().map(Decoded::Done),
        Ok(Some(Err(BodyError::Broken(err)))) => {
            // A body that breaks off after the finish reason still completed the answer.
            let err = redact(&shared.endpoint, &err);
            tracing::warn!(%err, "the response body broke off");
            decoder.end_of_stream().map(Decoded::Done)
        }
        Ok(Some(Err(BodyError::TooLarge(breach)))) => Err(breach.error(&shared.endpoint)),
        Ok(Some(Ok(payload))) => {
            tracing::trace!(payload = %redact(&shared.endpoint, &payload), "payload");
            decoder.feed(&payload)
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
    request: &CompletionRequest,
    deadline: Instant,
    cancel: &CancellationToken,
) -> Vec<Item> {
    let text = tokio::select! {
        biased;
        () = cancel.cancelled() => return Vec::new(),
        text = tokio::time::timeout_at(deadline, read_capped(response, MAX_EVENT)) => text,
    };
    let text = match text {
        Err(_elapsed) => return vec![Err(silence(shared, false))],
        Ok(Err(err)) => return vec![Err(errors::transport(&shared.endpoint, &err))],
        Ok(Ok((_, true))) => {
            let breach = Breach::new(StreamLimit::Event, MAX_EVENT);
            return vec![Err(breach.error(&shared.endpoint))];
        }
        Ok(Ok((text, false))) => text,
    };
    tracing::trace!(body = %redact(&shared.endpoint, &text), "non-streamed answer");
    let (model, max_tokens) = (request.model.as_str(), request.max_tokens);
    let mut decoder = sse::Decoder::new(shared.endpoint.clone(), model, max_tokens);
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

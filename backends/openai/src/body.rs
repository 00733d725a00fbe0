//! Drives a framer (SSE or NDJSON) over a response body: byte chunks in, payloads out, until
//! the body ends, breaks off, or breaks a limit.

use bytes::Bytes;
use futures::{Stream, StreamExt};

use crate::limits::Breach;

/// Cuts a body into payloads: SSE events' data ([`crate::sse_frame::SseFramer`]) or NDJSON
/// lines ([`crate::ndjson::NdjsonFramer`]).
pub(crate) trait Framer: Send + 'static {
    /// Appends `chunk`, adding every payload it completes to `out`.
    fn push(&mut self, chunk: &[u8], out: &mut Vec<String>) -> Result<(), Breach>;

    /// The body ended: adds what is left, if it makes a payload.
    fn finish(&mut self, out: &mut Vec<String>) -> Result<(), Breach>;
}

/// Why a body gave no more payloads before its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BodyError {
    /// The connection broke off (text for the log).
    Broken(String),
    /// The body broke a limit; nothing more is read.
    TooLarge(Breach),
}

/// The payloads `framer` finds in `body`, in order. After an error nothing follows, and the
/// body is dropped (closing the connection).
pub(crate) fn payloads<S, E, F>(
    body: S,
    mut framer: F,
) -> impl Stream<Item = Result<String, BodyError>> + Send
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::fmt::Display + Send,
    F: Framer,
{
    async_stream::stream! {
        let mut body = Box::pin(body);
        let mut out = Vec::new();
        while let Some(chunk) = body.next().await {
            let bytes = match chunk {
                Ok(bytes) => bytes,
                Err(err) => {
                    yield Err(BodyError::Broken(err.to_string()));
                    return;
                }
            };
            let pushed = framer.push(&bytes, &mut out);
            for payload in out.drain(..) {
                yield Ok(payload);
            }
            if let Err(breach) = pushed {
                yield Err(BodyError::TooLarge(breach));
                return;
            }
        }
        let finished = framer.finish(&mut out);
        for payload in out.drain(..) {
            yield Ok(payload);
        }
        if let Err(breach) = finished {
            yield Err(BodyError::TooLarge(breach));
        }
    }
}

//! What the stream loop needs from a wire decoder: SSE `data:` payloads
//! ([`crate::sse::Decoder`]) or Ollama NDJSON lines ([`crate::ollama_decode::Decoder`]).

use hearth_backend::{BackendError, BackendEvent};

/// What one payload produced.
#[derive(Debug, PartialEq)]
pub(crate) enum Decoded {
    /// Events to pass on; the stream goes on.
    More(Vec<BackendEvent>),
    /// The answer is complete: pass these on (the last is `Finished`) and stop reading.
    Done(Vec<BackendEvent>),
}

/// Decoding state of one streamed completion, fed one payload (an SSE frame's data, or one
/// NDJSON line) at a time.
pub(crate) trait Decode: Send {
    /// Whether the model has produced anything yet. Until it has, the first-token limit
    /// applies; afterwards the idle limit.
    fn output_started(&self) -> bool;

    /// How much answer (bytes of text, reasoning, tool calls) came so far. The idle limit
    /// counts from the last payload that moved it (or the first output), so a server that
    /// keeps sending empty chunks is as silent as one that sends nothing.
    fn progress(&self) -> usize;

    /// Decodes one payload. A payload that is not valid JSON is logged and skipped; an error
    /// object sent in the stream ends it with that error.
    fn feed(&mut self, payload: &str) -> Result<Decoded, BackendError>;

    /// The body ended (EOF or a broken connection) without an end marker: a proper end if the
    /// finish reason already came, else [`BackendError::StreamClosed`].
    fn end_of_stream(&mut self) -> Result<Vec<BackendEvent>, BackendError>;
}

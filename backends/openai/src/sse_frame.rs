//! Server-sent events framing, incremental over byte chunks and linear in the body's size:
//! lines (any of `\n`, `\r\n`, `\r`, cut anywhere) become events, and each event's `data` is
//! handed on as one payload.
//!
//! What is read, per the WHATWG event-stream format: a `data:` line (one space after the colon
//! dropped) adds its value to the event, several joined with `\n`; a blank line dispatches the
//! event, when it had data; a line starting with `:` is a comment; `event:`, `id:`, `retry:`
//! and unknown fields are ignored (OpenAI-compatible servers name no events, and a
//! completion cannot be resumed by id); a byte-order mark opening the body is dropped.
//!
//! Two choices of our own:
//! - Invalid UTF-8 is replaced (U+FFFD), line by line once the line is complete (so a
//!   character cut across chunks is whole by then). A payload is JSON, so a stray byte costs
//!   at most that one chunk (it fails to parse and is skipped, or carries one U+FFFD),
//!   where an error would throw away the whole answer. The NDJSON path does the same.
//! - At the end of the body, an unfinished last line and an event without its blank line
//!   still count (the spec drops them): a server that closes right after `data: [DONE]`
//!   has finished, and anything else fails to parse as JSON and is skipped anyway.
//!
//! Caps (see [`crate::limits`]): a line longer than [`MAX_LINE`] and an event whose data
//! passes [`MAX_EVENT`] fail as soon as the bytes held would pass the cap, so the framer
//! never holds more than one unfinished line and one event's data below their caps.

use hearth_backend::StreamLimit;

use crate::body::Framer;
use crate::limits::{Breach, MAX_EVENT, MAX_LINE};
use crate::line_buf::{Ends, LineBuf};

const BOM: &[u8] = "\u{feff}".as_bytes();

/// Framing state of one SSE body.
#[derive(Debug)]
pub(crate) struct SseFramer {
    lines: LineBuf,
    event: Event,
}

/// The event being read.
#[derive(Debug)]
struct Event {
    data: String,
    /// Whether a `data` field came (an empty `data:` still makes an event).
    has_data: bool,
    /// No line was read yet: a byte-order mark may open it.
    first_line: bool,
    max_event: usize,
}

impl SseFramer {
    /// A framer with the standard caps.
    pub(crate) fn new() -> Self {
        Self::with_caps(MAX_LINE, MAX_EVENT)
    }

    /// A framer with other caps (tests use small ones).
    pub(crate) fn with_caps(max_line: usize, max_event: usize) -> Self {
        Self {
            lines: LineBuf::new(Ends::Sse, max_line),
            event: Event {
                data: String::new(),
                has_data: false,
                first_line: true,
                max_event,
            },
        }
    }

    /// Bytes held now: the unfinished line and the event's data so far.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.lines.pending() + self.event.data.len()
    }
}

impl Framer for SseFramer {
    fn push(&mut self, chunk: &[u8], out: &mut Vec<String>) -> Result<(), Breach> {
        let Self { lines, event } = self;
        lines.push(chunk, |line| event.line(line, out))
    }

    fn finish(&mut self, out: &mut Vec<String>) -> Result<(), Breach> {
        let Self { lines, event } = self;
        lines.finish(|line| event.line(line, out))?;
        event.dispatch(out);
        Ok(())
    }
}

impl Event {
    /// Reads one complete line (without its line end).
    fn line(&mut self, line: &[u8], out: &mut Vec<String>) -> Result<(), Breach> {
        let line = if std::mem::take(&mut self.first_line) {
            line.strip_prefix(BOM).unwrap_or(line)
        } else {
            line
        };
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            // A comment (`: keep-alive`).
            Some(0) => return Ok(()),
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        if field == b"data" {
            self.append(value)?;
        }
        Ok(())
    }

    fn append(&mut self, value: &[u8]) -> Result<(), Breach> {
        let text = String::from_utf8_lossy(value);
        let separator = usize::from(self.has_data);
        let size = self.data.len() + separator + text.len();
        if size > self.max_event {
            return Err(Breach::new(StreamLimit::Event, self.max_event));
        }
        if self.has_data {
            self.data.push('\n');
        }
        self.data.push_str(&text);
        self.has_data = true;
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<String>) {
        if std::mem::take(&mut self.has_data) {
            out.push(std::mem::take(&mut self.data));
        }
    }
}

#[cfg(test)]
#[path = "sse_frame_tests.rs"]
mod tests;

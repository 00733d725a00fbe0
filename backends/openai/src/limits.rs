//! What hearth accepts from one answer, so that a broken or hostile server cannot make it
//! buffer without end: caps on one line, one event, the whole answer, and its tool calls.
//!
//! Why these numbers:
//! - [`MAX_LINE`] (4 MiB): a streamed chunk carries a few tokens (under 1 KiB of JSON); a line
//!   thousands of times that long is no server's output. Ollama's NDJSON lines fall under the
//!   same cap, and so does Ollama's last line, which repeats no text.
//! - [`MAX_EVENT`] (8 MiB): an SSE event may join several `data:` lines; twice the line cap
//!   leaves room for that. A non-streamed answer (one JSON body) gets the same cap.
//! - The answer cap ([`Budget::for_answer`]): 16 bytes per requested token, at least 1 MiB,
//!   at most 64 MiB; 16 MiB when the request sets no `max_tokens`. A token averages about 4
//!   bytes of text, and even long whitespace or CJK tokens stay well below 16, so an honest
//!   answer never gets near it; the 1 MiB floor keeps tiny requests from tripping on a
//!   server that overshoots a little. 16 MiB is about 4 M tokens, more than any model's
//!   window, and the 64 MiB ceiling keeps an absurd `max_tokens` from lifting the cap.
//! - [`MAX_TOOL_CALLS`] (128) distinct calls in one answer and [`MAX_CALL_ARGUMENTS`]
//!   (8 MiB) per call: far beyond what a model asks for in one turn, yet bounded.

use hearth_backend::{BackendError, StreamLimit};

use crate::config::OpenAiEndpoint;

/// Longest line of a streamed body, in bytes (its line end not counted).
pub(crate) const MAX_LINE: usize = 4 << 20;
/// Largest SSE event (its `data:` values joined), or non-streamed body, in bytes.
pub(crate) const MAX_EVENT: usize = 8 << 20;
/// Most distinct tool calls in one answer.
pub(crate) const MAX_TOOL_CALLS: usize = 128;
/// Largest arguments of one tool call, in bytes.
pub(crate) const MAX_CALL_ARGUMENTS: usize = 8 << 20;

const BYTES_PER_TOKEN: u64 = 16;
const MIN_ANSWER: usize = 1 << 20;
const MAX_ANSWER: usize = 64 << 20;
const UNKNOWN_ANSWER: usize = 16 << 20;

/// A limit the body broke, before anyone named the endpoint (the framers do not know it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Breach {
    pub what: StreamLimit,
    pub limit: usize,
}

impl Breach {
    pub(crate) fn new(what: StreamLimit, limit: usize) -> Self {
        Self { what, limit }
    }

    /// The error the stream ends with.
    pub(crate) fn error(self, endpoint: &OpenAiEndpoint) -> BackendError {
        BackendError::StreamTooLarge {
            endpoint: endpoint.name.clone(),
            what: self.what,
            limit: self.limit,
        }
    }
}

/// What one answer may still take: its text, reasoning and tool-call arguments together, and
/// its tool calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Budget {
    limit: usize,
    spent: usize,
}

impl Budget {
    /// The budget of an answer asked for with `max_tokens` (see the module docs for why).
    pub(crate) fn for_answer(max_tokens: Option<u32>) -> Self {
        let limit = match max_tokens {
            None => UNKNOWN_ANSWER,
            Some(tokens) => {
                let bytes = u64::from(tokens).saturating_mul(BYTES_PER_TOKEN);
                usize::try_from(bytes)
                    .unwrap_or(MAX_ANSWER)
                    .clamp(MIN_ANSWER, MAX_ANSWER)
            }
        };
        Self { limit, spent: 0 }
    }

    /// Counts `bytes` more of the answer; fails once the total passes the cap.
    pub(crate) fn spend(&mut self, bytes: usize) -> Result<(), Breach> {
        self.spent = self.spent.saturating_add(bytes);
        if self.spent > self.limit {
            return Err(Breach::new(StreamLimit::Answer, self.limit));
        }
        Ok(())
    }

    /// Bytes of answer so far: the stream loop reads a change as the model making progress.
    pub(crate) fn spent(&self) -> usize {
        self.spent
    }

    /// Fails when an answer would hold `calls` distinct tool calls.
    pub(crate) fn check_calls(calls: usize) -> Result<(), Breach> {
        if calls > MAX_TOOL_CALLS {
            return Err(Breach::new(StreamLimit::ToolCalls, MAX_TOOL_CALLS));
        }
        Ok(())
    }

    /// Fails when one call's arguments would be `len` bytes long.
    pub(crate) fn check_arguments(len: usize) -> Result<(), Breach> {
        if len > MAX_CALL_ARGUMENTS {
            return Err(Breach::new(StreamLimit::ToolArguments, MAX_CALL_ARGUMENTS));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_cap_follows_max_tokens_within_its_floor_and_ceiling() {
        let limit = |tokens| Budget::for_answer(tokens).limit;
        assert_eq!(limit(None), 16 << 20);
        assert_eq!(limit(Some(0)), 1 << 20);
        assert_eq!(limit(Some(1000)), 1 << 20);
        assert_eq!(limit(Some(1 << 20)), 16 << 20);
        assert_eq!(limit(Some(u32::MAX)), 64 << 20);
    }

    #[test]
    fn spending_past_the_cap_fails_and_keeps_failing() {
        let mut budget = Budget::for_answer(Some(1));
        assert_eq!(budget.spend(MIN_ANSWER), Ok(()));
        let breach = Breach::new(StreamLimit::Answer, MIN_ANSWER);
        assert_eq!(budget.spend(1), Err(breach));
        assert_eq!(budget.spend(0), Err(breach));
        assert_eq!(budget.spent(), MIN_ANSWER + 1);
    }

    #[test]
    fn calls_and_arguments_are_checked_against_their_caps() {
        assert!(Budget::check_calls(MAX_TOOL_CALLS).is_ok());
        assert!(Budget::check_calls(MAX_TOOL_CALLS + 1).is_err());
        assert!(Budget::check_arguments(MAX_CALL_ARGUMENTS).is_ok());
        let err = Budget::check_arguments(MAX_CALL_ARGUMENTS + 1).unwrap_err();
        let endpoint = OpenAiEndpoint::new("lan", "http://h/v1");
        assert_eq!(
            err.error(&endpoint),
            BackendError::StreamTooLarge {
                endpoint: "lan".into(),
                what: StreamLimit::ToolArguments,
                limit: MAX_CALL_ARGUMENTS,
            }
        );
    }
}

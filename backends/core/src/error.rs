use std::time::Duration;

/// Why a backend request failed. Each variant's doc says what the agent's turn loop does.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BackendError {
    /// Nothing listens at the endpoint. The turn ends with this error shown; not retried.
    #[error("endpoint `{endpoint}` refused the connection at {url}")]
    ConnectionRefused { endpoint: String, url: String },

    /// Any other network failure (DNS, TLS, reset). The turn ends with this error shown.
    #[error("endpoint `{endpoint}`: {message}")]
    Transport { endpoint: String, message: String },

    /// No connection or no first byte within the configured time. The turn ends; not retried.
    #[error("endpoint `{endpoint}` sent nothing within {after:?} ({stage})")]
    Timeout {
        endpoint: String,
        stage: TimeoutStage,
        after: Duration,
    },

    /// The stream went silent mid-answer for longer than the idle limit. The turn ends with
    /// the partial answer kept.
    #[error("endpoint `{endpoint}` went silent for {after:?} mid-answer")]
    IdleTimeout { endpoint: String, after: Duration },

    /// The server answered with an error status. The turn ends with the status and a short
    /// snippet of the body shown (never credentials).
    #[error("endpoint `{endpoint}` answered HTTP {status}: {body}")]
    Http {
        endpoint: String,
        status: u16,
        body: String,
    },

    /// 429 after the bounded retries were spent (retries happen only before any token).
    #[error("endpoint `{endpoint}` is rate limiting (retry after {retry_after:?})")]
    RateLimited {
        endpoint: String,
        retry_after: Option<Duration>,
    },

    /// The prompt does not fit the model's window. The turn loop learns the server's count
    /// (`prompt_tokens`, when the server said it) and retries once with the request fitted
    /// again.
    #[error("the prompt does not fit the context window of `{model}`: {detail}")]
    ContextWindowExceeded {
        model: String,
        detail: String,
        /// The prompt's size in the server's own tokens, when its message states it (vLLM,
        /// llama.cpp and OpenAI-style errors do).
        prompt_tokens: Option<u32>,
        /// The window the server says it has, when it says.
        window: Option<u32>,
    },

    /// The stream ended without a finish reason or `[DONE]`. The turn ends with the partial
    /// answer kept.
    #[error("endpoint `{endpoint}` closed the stream before the answer finished")]
    StreamClosed { endpoint: String },

    /// The server sent more than hearth accepts from one answer: an SSE or NDJSON line, one
    /// event, the answer as a whole, its tool calls, or one call's arguments went past
    /// `limit`. hearth stops reading (so a broken or hostile server cannot exhaust memory)
    /// and drops the connection. The turn ends with this error reported to the user, with the
    /// partial answer kept; it is not retried, since the same server would do it again.
    #[error("endpoint `{endpoint}` sent too much: {what} went past {limit} {}", .what.unit())]
    StreamTooLarge {
        endpoint: String,
        what: StreamLimit,
        limit: usize,
    },

    /// The request itself was invalid (unknown model, bad parameters). Not retried.
    #[error("invalid request: {0}")]
    InvalidRequest(String),

    /// The model cannot be used now (not downloaded, failed to load). Not retried.
    #[error("model `{model}` is unavailable: {reason}")]
    ModelUnavailable { model: String, reason: String },

    /// The engine's device faulted; the model refuses work until it is reloaded. The turn ends.
    #[error("model poisoned: {cause}")]
    ModelPoisoned { cause: String },

    /// The engine ran out of memory for this sequence; its cache was reset. The turn ends.
    #[error("out of memory: {detail}")]
    OutOfMemory { detail: String },

    /// A bug or an unexpected state inside the backend. The turn ends with the message shown.
    #[error("backend failure: {0}")]
    Internal(String),
}

/// Which wait ran out in [`BackendError::Timeout`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutStage {
    Connect,
    FirstToken,
}

impl std::fmt::Display for TimeoutStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Connect => "connecting",
            Self::FirstToken => "waiting for the first token",
        })
    }
}

/// Which limit a [`BackendError::StreamTooLarge`] broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamLimit {
    /// One line of the body (an SSE field line or an NDJSON line).
    Line,
    /// One event: the joined `data:` lines of an SSE event, or a non-streamed answer's body.
    Event,
    /// The answer's text, reasoning and tool-call arguments together.
    Answer,
    /// How many distinct tool calls one answer makes.
    ToolCalls,
    /// One tool call's arguments.
    ToolArguments,
}

impl StreamLimit {
    /// What `limit` counts: bytes, or calls for [`StreamLimit::ToolCalls`].
    pub fn unit(self) -> &'static str {
        match self {
            Self::ToolCalls => "calls",
            _ => "bytes",
        }
    }
}

impl std::fmt::Display for StreamLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Line => "one line",
            Self::Event => "one event",
            Self::Answer => "the answer (text, reasoning and tool arguments)",
            Self::ToolCalls => "the number of tool calls",
            Self::ToolArguments => "one tool call's arguments",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_too_large_names_the_endpoint_the_limit_and_its_unit() {
        let err = BackendError::StreamTooLarge {
            endpoint: "lan".into(),
            what: StreamLimit::Line,
            limit: 4096,
        };
        assert_eq!(
            err.to_string(),
            "endpoint `lan` sent too much: one line went past 4096 bytes"
        );
        let calls = BackendError::StreamTooLarge {
            endpoint: "lan".into(),
            what: StreamLimit::ToolCalls,
            limit: 128,
        };
        assert!(calls.to_string().ends_with("128 calls"), "{calls}");
    }
}

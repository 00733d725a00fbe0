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

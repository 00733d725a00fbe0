//! Streaming client for OpenAI-compatible `/v1/chat/completions` and `/v1/models` (vLLM,
//! SGLang, llama.cpp server, LM Studio, Ollama, OpenRouter), behind [`hearth_backend::Backend`].
//!
//! Build an [`OpenAiBackend`] from an [`OpenAiEndpoint`]; its `base_url` goes up to and
//! including `/v1` (a trailing slash is fine).
//!
//! # Streaming
//! Requests are sent with `stream: true` and `stream_options.include_usage: true`. The SSE
//! deltas become events in arrival order: `delta.content` → `Text`, `delta.reasoning_content`
//! or `delta.reasoning` → `Reasoning`. Native `tool_calls` are assembled per `index` and
//! emitted complete when the finish reason arrives. `Usage` and `Finished` are held back to
//! the end: a successful stream always ends `…, ToolCall*, Usage?, Finished`. A server that
//! ignores `stream: true` and answers with one `application/json` completion is decoded into
//! the same events.
//!
//! # Limits and errors
//! - nothing listens → `ConnectionRefused`; no connection within `connect_timeout` →
//!   `Timeout { stage: Connect }`;
//! - no response headers and no model output within `first_token_timeout` of sending →
//!   `Timeout { stage: FirstToken }`; silence between events longer than `idle_timeout` once
//!   output started → `IdleTimeout`;
//! - a non-2xx answer → `Http` with a ≤ 300-character snippet (the `error.message` when there
//!   is one) from which the API key is scrubbed; a 400 that says the context length was
//!   exceeded → `ContextWindowExceeded`; an error object sent inside the stream is treated the
//!   same way;
//! - `429` is retried up to `max_rate_limit_retries` times, waiting what `retry-after-ms` or
//!   `Retry-After` (seconds) asks, each wait capped at `max_retry_wait` (1 s, 2 s, 4 s… when
//!   the server does not say); then `RateLimited`. Retries only happen before anything was
//!   streamed, since a 429 always comes before the body;
//! - the body ends (or breaks) before a finish reason and without `[DONE]` → `StreamClosed`;
//! - a chunk that is not valid JSON is logged at `warn` and skipped.
//!
//! # Cancellation
//! Cancelling the token or dropping the stream drops the HTTP response at once, which closes
//! its connection, so the server stops generating. A cancelled stream simply ends: it yields
//! neither an error nor `Finished`.
//!
//! # Logging
//! Each stream runs in a `provider.request{model, endpoint}` span; SSE frames and request
//! bodies are logged at `trace` only, and the API key never.

mod backend;
mod config;
mod decode;
mod errors;
mod models;
mod ndjson;
mod ollama_decode;
mod ollama_request;
mod ollama_wire;
mod request;
mod route;
mod send;
mod sse;
mod stream;
mod wire;

pub use backend::OpenAiBackend;
pub use config::OpenAiEndpoint;

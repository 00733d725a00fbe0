//! Streaming client for OpenAI-compatible `/v1/chat/completions` and `/v1/models` (vLLM,
//! SGLang, llama.cpp server, LM Studio, Ollama, OpenRouter), and Ollama's native `/api/chat`,
//! behind [`hearth_backend::Backend`].
//!
//! Build an [`OpenAiBackend`] from an [`OpenAiEndpoint`]; its `base_url` goes up to and
//! including `/v1` (a trailing slash is fine).
//!
//! # Describing a model
//! [`Backend::describe`](hearth_backend::Backend::describe) finds a model's window in the
//! server's own dialect, concurrently and with short timeouts: llama.cpp `GET /props` `n_ctx`,
//! vLLM's `max_model_len` in `GET /v1/models`, LM Studio's `GET /api/v0/models/{model}`
//! (loaded, else maximum, context length), Ollama's `POST /api/show` and `GET /api/ps` (the
//! loaded context, else the Modelfile's `num_ctx`, else the trained length capped at 32k), and
//! last another server's `context_length` in the model list. It also tells which server it is:
//! Ollama when `/api/show` answers or the port is 11434.
//!
//! # Ollama's native chat
//! A request to an Ollama server whose
//! [`CompletionRequest::context_window`](hearth_backend::CompletionRequest) is `Some(n)` goes to
//! Ollama's native `POST {root}/api/chat` instead, where `root` is `base_url` without its
//! trailing `/v1`, with `options.num_ctx = n` (and `num_predict`, `temperature`, `stop` from the
//! request). Why: Ollama's OpenAI-compatible endpoint ignores `num_ctx` (ollama/ollama#2722,
//! #7063), so a prompt longer than its small default context is cut silently. Other servers
//! never see this path: for them the window is not sent. The native body carries images as base64 `images`, tool-call
//! arguments as JSON objects, tool results with their `tool_name`; earlier reasoning is not sent
//! back. The NDJSON answer becomes the same events as below: `message.thinking` → `Reasoning`,
//! `message.content` → `Text`, whole `tool_calls` (ids `call_N` unless the server gives one,
//! arguments re-serialised to JSON text) held back to the end, then `Usage` (from
//! `prompt_eval_count`/`eval_count`) and `Finished` from `done_reason` (`stop` after tool calls
//! → `ToolCalls`). Limits, retries, errors, cancellation and logging are the same as for SSE;
//! an `{"error": ...}` line is an error sent inside the stream, and a body that ends before
//! the `done: true` line is `StreamClosed`.
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
//!   is one) from which every secret of the endpoint (API key, header values of 8 bytes or
//!   more, the user info of the base URL) is redacted, as in every other message built from
//!   server text or a URL; a 400 that says the context length was
//!   exceeded → `ContextWindowExceeded`; an error object sent inside the stream is treated the
//!   same way;
//! - `429` is retried up to `max_rate_limit_retries` times, waiting what `retry-after-ms` or
//!   `Retry-After` (seconds) asks, each wait capped at `max_retry_wait` (1 s, 2 s, 4 s… when
//!   the server does not say); then `RateLimited`. Retries only happen before anything was
//!   streamed, since a 429 always comes before the body;
//! - the body ends (or breaks) before a finish reason and without `[DONE]` → `StreamClosed`;
//! - a chunk (or NDJSON line) that is not valid JSON is logged at `warn` and skipped;
//! - a line over 4 MiB, an SSE event (or non-streamed body) over 8 MiB, an answer whose text,
//!   reasoning and tool arguments pass 16 bytes per `max_tokens` (1 MiB to 64 MiB; 16 MiB
//!   without `max_tokens`), more than 128 tool calls or one call's arguments over 8 MiB →
//!   `StreamTooLarge`, as soon as the bytes held would pass the cap (see `limits.rs`);
//! - once output started, the idle limit counts from the last payload that added to the answer,
//!   so endless empty chunks end in `IdleTimeout` too.
//!
//! # Cancellation
//! Cancelling the token or dropping the stream drops the HTTP response at once, which closes
//! its connection, so the server stops generating. A cancelled stream simply ends: it yields
//! neither an error nor `Finished`.
//!
//! # Logging
//! Each stream runs in a `provider.request{model, endpoint, api}` span (`api` is `openai` or
//! `ollama`); SSE frames, NDJSON lines and request bodies are logged at `trace` only, the
//! frames with the endpoint's secrets redacted, and the API key never.

mod backend;
mod body;
mod config;
mod decode;
mod describe;
mod errors;
mod limits;
mod line_buf;
mod models;
mod ndjson;
mod ollama_decode;
mod ollama_request;
mod ollama_wire;
mod overflow;
mod probes;
mod redact;
mod request;
mod route;
mod send;
mod shared;
mod sse;
mod sse_frame;
mod stream;
mod wire;

pub use backend::OpenAiBackend;
pub use config::OpenAiEndpoint;

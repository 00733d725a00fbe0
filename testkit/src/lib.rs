//! Fakes for hearth's tests: [`FakeServer`], an OpenAI-compatible HTTP/1.1 server on loopback
//! that answers with scripted replies and streams real SSE bytes. It runs on its own thread and
//! runtime, so blocking test code cannot stall it.
//!
//! # Routes
//! - `POST /v1/chat/completions` and `POST /api/chat` (Ollama's native chat): pop the next
//!   [`Reply`] pushed with [`FakeServer::push`] (FIFO, one queue for both). When the queue is
//!   empty they answer `500` with a body that says so.
//! - `GET /v1/models`: the JSON set with [`FakeServer::set_models`]
//!   (default `{"object":"list","data":[]}`).
//! - anything else: `404`.
//!
//! Every request, whatever its route, is recorded ([`FakeServer::requests`]) with its method, path
//! (query string removed), headers (names lowercased) and body parsed as JSON.
//!
//! # Replies
//! [`Reply::Sse`] streams its [`Step`]s with chunked transfer encoding, one HTTP chunk per
//! [`Step::Bytes`], so tests control exactly where the bytes are cut (mid-line, mid-UTF-8; add a
//! [`Step::Pause`] between cuts to make sure the client reads them separately).
//! [`Reply::SseUntilClose`] does the same without chunking and closes the connection at the end.
//! [`Reply::after`] delays the response headers (first-token timeouts). [`Step::Hang`] sends
//! nothing more and keeps the connection open until the client goes away (idle timeouts,
//! cancellation); [`Step::Disconnect`] drops the connection abruptly.
//!
//! A reply the client abandons before it is complete (while delayed, mid-stream, or hanging) is
//! counted by [`FakeServer::dropped_streams`]; [`FakeServer::wait_dropped`] waits for it, which
//! is how tests prove that a cancelled request closed its HTTP connection.
//!
//! # Example
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use hearth_testkit::{FakeServer, Reply};
//! let server = FakeServer::start().await?;
//! server.push(Reply::text(&["Hel", "lo"]));
//! // point the client at server.base_url() ("http://127.0.0.1:PORT/v1")
//! let seen = server
//!     .wait_requests(1, std::time::Duration::from_secs(5))
//!     .await;
//! # drop(seen);
//! # Ok(()) }
//! ```
//!
//! [`FakeServer::set_window_gate`] makes it a strict server: a [`WindowGate`] counts each chat
//! prompt with its own tokenizer ([`bpe_like_tokens`] by default), rejects one over the window
//! with vLLM's message, and reports its count as `usage.prompt_tokens` otherwise;
//! [`FakeServer::gated`] lists what it counted and rejected.
//!
//! [`FakeServer::written`] tells when each step's bytes left the server (for latency figures);
//! [`FakeServer::connections`] how many TCP connections were accepted (connection reuse).
//!
//! The chunk builders ([`chunk_content`], [`chunk_tool_call`], …) each return one SSE frame,
//! `data: {json}\n\n`, holding a real `chat.completion.chunk` object. The `ollama_*` builders
//! ([`ollama_content`], [`ollama_done`], …) each return one NDJSON line of Ollama's native
//! stream, for [`Reply::ndjson`] / [`Reply::Ndjson`] (`content-type: application/x-ndjson`).

mod chunks;
mod conn;
mod http;
mod ndjson;
mod reply;
mod server;
mod window_gate;

pub use chunks::{
    DONE, FAKE_MODEL, chunk_content, chunk_delta, chunk_finish, chunk_reasoning,
    chunk_reasoning_as, chunk_role, chunk_tool_call, chunk_usage, data_frame,
};
pub use ndjson::{
    ndjson_line, ollama_content, ollama_done, ollama_message, ollama_thinking, ollama_tool_call,
};
pub use reply::{Reply, Step};
pub use server::{FakeServer, Gated, Recorded, Written};
pub use window_gate::{
    TEMPLATE_TOKENS_PER_MESSAGE, TextCounter, WindowGate, bpe_like_tokens, with_prompt_tokens,
};

//! The fake server: its shared state, the accept loop, and the API tests call.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};

use crate::http::Request;
use crate::reply::Reply;
use crate::window_gate::{WindowGate, with_prompt_tokens};

/// One request the server received.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub method: String,
    /// The path without the query string, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Header names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON; `Value::Null` when empty or not JSON (see `raw_body`).
    pub body: Value,
    /// The body as text (lossy UTF-8).
    pub raw_body: String,
}

impl Recorded {
    /// The first value of header `name` (give it lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// When one [`crate::Step::Bytes`] of a streamed reply went out, for latency measurements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// Index of the request it answers, in [`FakeServer::requests`].
    pub request: usize,
    /// Index of the step in the reply's step list.
    pub step: usize,
    /// Right after the bytes were handed to the socket.
    pub at: Instant,
}

struct State {
    replies: VecDeque<Reply>,
    /// Replies for requests whose body contains a marker, checked before `replies`.
    keyed: Vec<(String, Reply)>,
    /// Fixed JSON answers by (method, path), e.g. a server's `/props`.
    json_routes: std::collections::HashMap<(String, String), Value>,
    models: Value,
    requests: Vec<Recorded>,
    dropped: usize,
    connections: usize,
    written: Vec<Written>,
    /// The context limit chat requests are held to, if any.
    gate: Option<WindowGate>,
    /// What the gate counted for each chat request it saw.
    gated: Vec<Gated>,
}

/// What a [`WindowGate`] made of one chat request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gated {
    /// Index of the request in [`FakeServer::requests`].
    pub request: usize,
    /// The prompt's size by the server's count.
    pub prompt_tokens: u32,
    /// The `max_tokens` it asked for (0 when it set none).
    pub max_tokens: u32,
    /// Whether it was rejected as too long.
    pub rejected: bool,
}

/// State shared by the handle and the connection tasks.
pub(crate) struct Shared {
    state: Mutex<State>,
    /// Bumped on every change, so waiters re-check without polling.
    changed: watch::Sender<()>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere cannot leave State half-updated (every update is one statement),
        // so a poisoned lock is still good to use.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn update(&self, f: impl FnOnce(&mut State)) {
        f(&mut self.lock());
        self.changed.send_modify(|_| {});
    }

    /// Records `request` and picks the reply for it; also returns the request's index.
    pub(crate) fn route(&self, request: &Request) -> (usize, Reply) {
        let raw_body = String::from_utf8_lossy(&request.body).into_owned();
        let body_text = raw_body.clone();
        let recorded = Recorded {
            method: request.method.clone(),
            path: request.path.clone(),
            headers: request.headers.clone(),
            body: serde_json::from_str(&raw_body).unwrap_or(Value::Null),
            raw_body,
        };
        let mut reply = None;
        let mut index = 0;
        self.update(|state| {
            state.requests.push(recorded);
            let n = state.requests.len();
            index = n - 1;
            reply = Some(match (request.method.as_str(), request.path.as_str()) {
                // Ollama's native chat shares the queue: a test pushes the reply the route it
                // expects answers with (SSE or NDJSON).
                ("POST", "/v1/chat/completions" | "/api/chat") => {
                    chat_reply(state, index, &body_text)
                }
                ("GET", "/v1/models") => Reply::Status {
                    code: 200,
                    headers: Vec::new(),
                    body: state.models.to_string(),
                },
                (method, path)
                    if state
                        .json_routes
                        .contains_key(&(method.into(), path.into())) =>
                {
                    Reply::Status {
                        code: 200,
                        headers: Vec::new(),
                        body: state.json_routes[&(method.into(), path.into())].to_string(),
                    }
                }
                (method, path) => Reply::error(
                    404,
                    &format!("hearth-testkit: no route for {method} {path}"),
                ),
            });
        });
        let reply = reply.unwrap_or_else(|| Reply::error(500, "hearth-testkit: routing failed"));
        (index, reply)
    }

    fn note_connection(&self) {
        self.update(|state| state.connections += 1);
    }

    pub(crate) fn note_written(&self, request: usize, step: usize) {
        let at = Instant::now();
        // No waiter looks at this, so no change notification either.
        self.lock().written.push(Written { request, step, at });
    }

    pub(crate) fn note_dropped(&self) {
        self.update(|state| state.dropped += 1);
    }

    /// Waits until `check` returns `Some`, or `timeout` passes (then `None`).
    async fn wait_for<T>(
        &self,
        timeout: Duration,
        check: impl Fn(&State) -> Option<T>,
    ) -> Option<T> {
        let mut changes = self.changed.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(found) = check(&self.lock()) {
                return Some(found);
            }
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                _ => return None,
            }
        }
    }
}

/// The reply to chat request `index`: the gate's rejection when it is over the window, else the
/// keyed reply its body matches or the next queued one (its usage set to the gate's count).
fn chat_reply(state: &mut State, index: usize, body_text: &str) -> Reply {
    if let Some(gate) = &state.gate {
        let body = &state.requests[index].body;
        let prompt_tokens = gate.prompt_tokens(body);
        let max_tokens = body["max_tokens"]
            .as_u64()
            .or_else(|| body["max_completion_tokens"].as_u64())
            .map_or(0, |t| u32::try_from(t).unwrap_or(u32::MAX));
        let rejection = gate.check(prompt_tokens, max_tokens);
        state.gated.push(Gated {
            request: index,
            prompt_tokens,
            max_tokens,
            rejected: rejection.is_some(),
        });
        if let Some(rejection) = rejection {
            return rejection;
        }
    }
    let keyed = state
        .keyed
        .iter()
        .position(|(marker, _)| body_text.contains(marker.as_str()));
    let next = match keyed {
        Some(i) => Some(state.keyed.remove(i).1),
        None => state.replies.pop_front(),
    };
    let next = next.unwrap_or_else(|| {
        Reply::error(
            500,
            &format!(
                "hearth-testkit: no reply queued for request #{} (push one)",
                index + 1
            ),
        )
    });
    match state.gated.last() {
        Some(gated) if gated.request == index => with_prompt_tokens(next, gated.prompt_tokens),
        _ => next,
    }
}

/// An OpenAI-compatible HTTP/1.1 server on `127.0.0.1`, scripted by the test.
///
/// It runs on its own thread with its own tokio runtime, so test code that blocks (waiting on
/// a child process, synchronous I/O) cannot stall it, and it works the same under any test
/// runtime. Every connection runs on its own task. Dropping the server stops it: when `drop`
/// returns, the port is closed and so is every connection.
pub struct FakeServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    /// Dropping it tells the server thread to stop.
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeServer {
    /// Binds `127.0.0.1:0` and starts serving (see [`FakeServer::start_blocking`]).
    pub async fn start() -> std::io::Result<FakeServer> {
        Self::start_blocking()
    }

    /// Like [`FakeServer::start`], for callers outside async code. Binding is immediate, so
    /// this does not block for long.
    pub fn start_blocking() -> std::io::Result<FakeServer> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                replies: VecDeque::new(),
                keyed: Vec::new(),
                json_routes: std::collections::HashMap::new(),
                models: json!({ "object": "list", "data": [] }),
                requests: Vec::new(),
                dropped: 0,
                connections: 0,
                written: Vec::new(),
                gate: None,
                gated: Vec::new(),
            }),
            changed: watch::Sender::new(()),
        });
        let (shutdown, stop) = oneshot::channel();
        let serving = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("fake-server-{}", addr.port()))
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = TcpListener::from_std(listener) else {
                        return;
                    };
                    tokio::select! {
                        () = accept_loop(listener, serving) => {}
                        _ = stop => {}
                    }
                });
                // Dropping the runtime here cancels every connection task, closing its socket.
            })?;
        Ok(FakeServer {
            shared,
            addr,
            shutdown: Some(shutdown),
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT/v1`, the base URL clients append `/chat/completions` to.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Queues `reply` for a later `POST /v1/chat/completions` or `POST /api/chat` (first in,
    /// first out).
    pub fn push(&self, reply: Reply) {
        self.shared.update(|state| state.replies.push_back(reply));
    }

    /// Queues `reply` for the next chat request whose raw body contains `marker`, ahead of
    /// the FIFO queue: for requests whose place in the sequence a test cannot know (a summary
    /// request the agent decides to make).
    pub fn push_when(&self, marker: &str, reply: Reply) {
        self.shared
            .update(|state| state.keyed.push((marker.to_owned(), reply)));
    }

    /// Answers every `method path` request with `body` (status 200), e.g. llama.cpp's
    /// `/props` or Ollama's `/api/show`, for tests of what a client discovers.
    pub fn set_json(&self, method: &str, path: &str, body: Value) {
        self.shared.update(|state| {
            state
                .json_routes
                .insert((method.to_owned(), path.to_owned()), body);
        });
    }

    /// Replies still queued.
    pub fn queued(&self) -> usize {
        self.shared.lock().replies.len()
    }

    /// Sets the body `GET /v1/models` answers with.
    pub fn set_models(&self, models: Value) {
        self.shared.update(|state| state.models = models);
    }

    /// Holds chat requests to `gate`'s window from now on, as a strict server does.
    pub fn set_window_gate(&self, gate: WindowGate) {
        self.shared.update(|state| state.gate = Some(gate));
    }

    /// What the window gate counted for each chat request, in order.
    pub fn gated(&self) -> Vec<Gated> {
        self.shared.lock().gated.clone()
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.lock().requests.clone()
    }

    /// Waits until at least `n` requests arrived or `timeout` passed, then returns all of them
    /// (fewer than `n` on timeout).
    pub async fn wait_requests(&self, n: usize, timeout: Duration) -> Vec<Recorded> {
        let found = self
            .shared
            .wait_for(timeout, |s| {
                (s.requests.len() >= n).then(|| s.requests.clone())
            })
            .await;
        found.unwrap_or_else(|| self.requests())
    }

    /// Replies the client abandoned before they were complete: during a delay, mid-stream,
    /// or while hanging.
    pub fn dropped_streams(&self) -> usize {
        self.shared.lock().dropped
    }

    /// When each [`crate::Step::Bytes`] of every streamed reply went out, in order.
    pub fn written(&self) -> Vec<Written> {
        self.shared.lock().written.clone()
    }

    /// TCP connections accepted so far (a client that reuses pooled connections opens fewer
    /// than it sends requests).
    pub fn connections(&self) -> usize {
        self.shared.lock().connections
    }

    /// Waits until [`FakeServer::dropped_streams`] reaches `n`; `false` if `timeout` passed first.
    pub async fn wait_dropped(&self, n: usize, timeout: Duration) -> bool {
        self.shared
            .wait_for(timeout, |s| (s.dropped >= n).then_some(()))
            .await
            .is_some()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        drop(self.shutdown.take());
        if let Some(thread) = self.thread.take() {
            // Quick: the runtime only has to cancel its tasks. A panic there already failed
            // whatever it was serving; nothing more to report here.
            let _ = thread.join();
        }
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Accept errors (e.g. too many open files) are transient; do not spin hot on them.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        shared.note_connection();
        tokio::spawn(crate::conn::serve(stream, shared.clone()));
    }
}

//! Requests that carry a context window to a server described as Ollama go to its native
//! `/api/chat`, and its NDJSON stream comes back as the same events as the SSE path.

use std::time::Duration;

use futures::StreamExt;
use hearth_backend::{
    Backend, BackendError, BackendEvent, CompletionRequest, FinishReason, Message, NativeToolCall,
    Role, ServerKind, ToolSpec, Usage, WindowSource,
};
use hearth_openai::{OpenAiBackend, OpenAiEndpoint};
use hearth_testkit::{
    FakeServer, Reply, Step, ollama_content, ollama_done, ollama_thinking, ollama_tool_call,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::*;

/// A backend that has described `qwen` on an Ollama server (`/api/show` answers), as the agent
/// does before its first request.
async fn described(endpoint: OpenAiEndpoint, server: &FakeServer) -> OpenAiBackend {
    server.set_json(
        "POST",
        "/api/show",
        json!({"parameters": "num_ctx 8192", "model_info": {"qwen2.context_length": 32768}}),
    );
    let backend = OpenAiBackend::new(endpoint).unwrap();
    let description = backend.describe("qwen").await;
    assert_eq!(description.server, ServerKind::Ollama);
    assert_eq!(description.window, Some((8192, WindowSource::Ollama)));
    backend
}

pub(crate) async fn ollama(server: &FakeServer) -> OpenAiBackend {
    described(endpoint_at(&server.base_url()), server).await
}

/// The chat requests the server received (describing a model sent probes too).
async fn chats(server: &FakeServer, n: usize) -> Vec<hearth_testkit::Recorded> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let chats: Vec<_> = server
            .requests()
            .into_iter()
            .filter(|r| r.path.ends_with("/chat") || r.path.ends_with("/completions"))
            .collect();
        if chats.len() >= n || tokio::time::Instant::now() >= deadline {
            return chats;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The request hearth sends to an Ollama server whose window it discovered.
pub(crate) fn native(window: u32) -> CompletionRequest {
    let mut request = request();
    request.context_window = Some(window);
    request
}

fn usage(prompt: u32, completion: u32) -> BackendEvent {
    BackendEvent::Usage {
        usage: Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            cached_tokens: None,
        },
    }
}

fn finished(reason: FinishReason) -> BackendEvent {
    BackendEvent::Finished { reason }
}

fn short_answer() -> Reply {
    Reply::ndjson(&[ollama_content("ok"), ollama_done("stop", 5, 1)])
}

#[tokio::test]
async fn a_context_window_sends_num_ctx_to_api_chat() {
    let server = FakeServer::start().await.unwrap();
    server.push(short_answer());
    let mut endpoint = endpoint_at(&format!("{}/", server.base_url()));
    endpoint.api_key = Some(KEY.into());
    let backend = described(endpoint, &server).await;
    let mut assistant = Message::assistant("");
    assistant.reasoning = Some("secret thoughts".into());
    assistant.tool_calls = vec![NativeToolCall {
        id: "c1".into(),
        name: "read".into(),
        arguments: r#"{"path":"a.rs"}"#.into(),
    }];
    let mut result = Message::text(Role::Tool, "fn main() {}");
    result.tool_call_id = Some("c1".into());
    let messages = vec![
        Message::system("be brief"),
        Message::user("read a.rs"),
        assistant,
        result,
    ];
    let mut request = CompletionRequest::new("qwen2.5-coder:7b", messages);
    request.context_window = Some(8192);
    request.max_tokens = Some(512);
    request.temperature = Some(0.2);
    request.tools = vec![ToolSpec {
        name: "read".into(),
        description: "reads a file".into(),
        parameters: json!({"type": "object"}),
    }];
    let (events, error) = collect_request(&backend, request).await;
    assert_eq!(error, None);
    assert_eq!(
        events,
        vec![text("ok"), usage(5, 1), finished(FinishReason::Stop)]
    );

    let seen = chats(&server, 1).await;
    let sent = &seen[0];
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/api/chat")
    );
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(sent.body["options"]["num_ctx"], 8192);
    assert_eq!(sent.body["options"]["num_predict"], 512);
    assert_eq!(
        sent.body,
        json!({
            "model": "qwen2.5-coder:7b",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "read a.rs"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"function": {"name": "read", "arguments": {"path": "a.rs"}}},
                ]},
                {"role": "tool", "content": "fn main() {}", "tool_name": "read"},
            ],
            "stream": true,
            "options": {"num_ctx": 8192, "num_predict": 512, "temperature": 0.2},
            "tools": [{"type": "function", "function": {
                "name": "read", "description": "reads a file", "parameters": {"type": "object"}}}],
        })
    );
}

#[tokio::test]
async fn without_a_context_window_requests_stay_on_v1_chat_completions() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::text(&["ok"]));
    let events = events(&backend(&server)).await;
    assert_eq!(events.first(), Some(&text("ok")));
    let seen = server.wait_requests(1, WAIT).await;
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert!(seen[0].body.get("options").is_none());
    assert_eq!(
        seen[0].body["stream_options"],
        json!({"include_usage": true})
    );
}

/// The window on a request is what the prompt was budgeted for, not a switch: a server that
/// is not Ollama gets the OpenAI wire and no window.
#[tokio::test]
async fn a_window_to_a_server_that_is_not_ollama_stays_on_v1_chat_completions() {
    let server = FakeServer::start().await.unwrap();
    server.set_json("GET", "/props", json!({"n_ctx": 16384}));
    server.push(Reply::text(&["ok"]));
    let backend = backend(&server);
    let description = backend.describe("qwen").await;
    assert_eq!(description.server, ServerKind::LlamaCpp);
    assert_eq!(description.window, Some((16384, WindowSource::LlamaCpp)));
    let (events, error) = collect_request(&backend, native(16384)).await;
    assert_eq!(error, None);
    assert_eq!(events.first(), Some(&text("ok")));
    let seen = chats(&server, 1).await;
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert!(seen[0].body.get("options").is_none());
    assert!(seen[0].body.get("context_window").is_none());
}

/// A later description that cannot reach `/api/show` (another model, a timeout) leaves the
/// endpoint on Ollama's native chat: the server did not change.
#[tokio::test]
async fn a_failed_later_probe_keeps_the_native_wire() {
    let server = FakeServer::start().await.unwrap();
    let backend = ollama(&server).await;
    server.set_json("POST", "/api/show", json!({"error": "not a model"}));
    let other = backend.describe("missing").await;
    assert_eq!(other.server, ServerKind::Unknown);
    server.push(short_answer());
    let (_, error) = collect_request(&backend, native(8192)).await;
    assert_eq!(error, None);
    assert_eq!(chats(&server, 1).await[0].path, "/api/chat");
}

#[tokio::test]
async fn thinking_text_and_a_tool_call_stream_as_events_with_usage() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::ndjson(&[
        ollama_thinking("The user wants "),
        ollama_thinking("a file."),
        ollama_content("Reading "),
        ollama_content("it."),
        // One key: serde_json keeps insertion order when a workspace crate enables its
        // `preserve_order` feature, so a multi-key object's text is not comparable.
        ollama_tool_call("read", json!({"path": "src/main.rs"})),
        ollama_done("stop", 321, 17),
    ]));
    let (events, error) = collect_request(&ollama(&server).await, native(8192)).await;
    assert_eq!(error, None);
    assert_eq!(
        events,
        vec![
            reasoning("The user wants "),
            reasoning("a file."),
            text("Reading "),
            text("it."),
            BackendEvent::ToolCall {
                call: NativeToolCall {
                    id: "call_0".into(),
                    name: "read".into(),
                    arguments: r#"{"path":"src/main.rs"}"#.into(),
                },
            },
            usage(321, 17),
            finished(FinishReason::ToolCalls),
        ]
    );
}

#[tokio::test]
async fn lines_cut_anywhere_give_the_same_events() {
    let lines = [
        ollama_thinking("é😀"),
        ollama_content("naïve ✓"),
        ollama_done("stop", 3, 2),
    ];
    let body = lines.concat().into_bytes();
    let want = vec![
        reasoning("é😀"),
        text("naïve ✓"),
        usage(3, 2),
        finished(FinishReason::Stop),
    ];
    for size in [1, 7, 64] {
        let server = FakeServer::start().await.unwrap();
        let pause = Some(Duration::from_millis(1));
        server.push(Reply::Ndjson(Step::every(&body, size, pause)));
        let (events, error) = collect_request(&ollama(&server).await, native(4096)).await;
        assert_eq!(error, None, "pieces of {size}");
        assert_eq!(events, want, "pieces of {size}");
    }
}

#[tokio::test]
async fn done_reason_length_is_finished_length() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::ndjson(&[
        ollama_content("cut sh"),
        ollama_done("length", 10, 64),
    ]));
    let (events, error) = collect_request(&ollama(&server).await, native(2048)).await;
    assert_eq!(error, None);
    assert_eq!(
        events,
        vec![
            text("cut sh"),
            usage(10, 64),
            finished(FinishReason::Length)
        ]
    );
}

#[tokio::test]
async fn an_error_line_ends_the_stream_with_the_mapped_error() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::ndjson(&[
        ollama_content("partial"),
        "{\"error\":\"model runner has unexpectedly stopped\"}\n".to_string(),
    ]));
    server.push(Reply::ndjson(&[
        "{\"error\":\"input length exceeds the context length\"}\n",
    ]));
    let backend = ollama(&server).await;
    let (events, error) = collect_request(&backend, native(8192)).await;
    assert_eq!(events, vec![text("partial")]);
    assert_eq!(
        error,
        Some(BackendError::Http {
            endpoint: "fake".into(),
            status: 500,
            body: "model runner has unexpectedly stopped".into(),
        })
    );
    let (events, error) = collect_request(&backend, native(8192)).await;
    assert!(events.is_empty());
    assert!(
        matches!(error, Some(BackendError::ContextWindowExceeded { ref model, .. }) if model == "qwen"),
        "{error:?}"
    );
}

#[tokio::test]
async fn error_statuses_map_like_the_sse_path_without_the_key() {
    let server = FakeServer::start().await.unwrap();
    let status = |code: u16, message: String| Reply::Status {
        code,
        headers: Vec::new(),
        body: json!({ "error": message }).to_string(),
    };
    server.push(status(404, format!("model 'qwen' not found, key {KEY}")));
    server.push(status(400, "prompt exceeds the context window".into()));
    let mut endpoint = endpoint_at(&server.base_url());
    endpoint.api_key = Some(KEY.into());
    let backend = described(endpoint, &server).await;
    let (_, error) = collect_request(&backend, native(8192)).await;
    assert_eq!(
        error,
        Some(BackendError::Http {
            endpoint: "fake".into(),
            status: 404,
            body: "model 'qwen' not found, key <redacted>".into(),
        })
    );
    let (_, error) = collect_request(&backend, native(8192)).await;
    assert!(
        matches!(error, Some(BackendError::ContextWindowExceeded { .. })),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_body_ending_before_done_is_stream_closed() {
    let server = FakeServer::start().await.unwrap();
    // One ends the body properly, one drops the connection.
    server.push(Reply::ndjson(&[ollama_content("partial")]));
    server.push(Reply::Ndjson(vec![
        Step::text(&ollama_content("partial")),
        Step::Disconnect,
    ]));
    let backend = ollama(&server).await;
    for _ in 0..2 {
        let (events, error) = collect_request(&backend, native(8192)).await;
        assert_eq!(events, vec![text("partial")]);
        assert_eq!(
            error,
            Some(BackendError::StreamClosed {
                endpoint: "fake".into()
            })
        );
    }
}

#[tokio::test]
async fn rate_limits_are_retried_on_the_native_path_too() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::Status {
        code: 429,
        headers: vec![("retry-after-ms".into(), "20".into())],
        body: String::new(),
    });
    server.push(short_answer());
    let (events, error) = collect_request(&ollama(&server).await, native(8192)).await;
    assert_eq!(error, None);
    assert_eq!(events.last(), Some(&finished(FinishReason::Stop)));
    let paths: Vec<String> = chats(&server, 2)
        .await
        .into_iter()
        .map(|r| r.path)
        .collect();
    assert_eq!(paths, vec!["/api/chat", "/api/chat"]);
}

#[tokio::test]
async fn silence_mid_answer_is_an_idle_timeout() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::Ndjson(vec![
        Step::text(&ollama_content("partial")),
        Step::Hang,
    ]));
    let mut endpoint = endpoint_at(&server.base_url());
    endpoint.idle_timeout = Duration::from_millis(150);
    let (events, error) = collect_request(&described(endpoint, &server).await, native(8192)).await;
    assert_eq!(events, vec![text("partial")]);
    assert_eq!(
        error,
        Some(BackendError::IdleTimeout {
            endpoint: "fake".into(),
            after: Duration::from_millis(150),
        })
    );
    assert!(server.wait_dropped(1, WAIT).await);
}

#[tokio::test]
async fn cancelling_mid_stream_ends_it_and_closes_the_connection() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::Ndjson(vec![
        Step::text(&ollama_content("first")),
        Step::Hang,
    ]));
    let backend = ollama(&server).await;
    let cancel = CancellationToken::new();
    let mut stream = backend.stream(native(8192), cancel.clone());
    assert_eq!(stream.next().await, Some(Ok(text("first"))));
    assert!(!server.wait_dropped(1, Duration::from_millis(100)).await);
    cancel.cancel();
    let end = tokio::time::timeout(WAIT, stream.next()).await.unwrap();
    assert_eq!(
        end, None,
        "a cancelled stream ends without error or Finished"
    );
    assert!(
        server.wait_dropped(1, WAIT).await,
        "the server never saw the close"
    );
}

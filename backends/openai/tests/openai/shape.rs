//! What goes over the wire: the request body and headers, and the model list.

use hearth_backend::{
    Backend, CompletionRequest, ContentPart, Message, ModelInfo, NativeToolCall, Role, ServerKind,
    ToolSpec, WindowSource,
};
use hearth_testkit::{FakeServer, Reply};
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn text_only_request_body_and_headers() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::text(&["ok"]));
    let mut endpoint = endpoint_at(&format!("{}/", server.base_url()));
    endpoint.api_key = Some(KEY.into());
    endpoint.headers = vec![("X-Title".into(), "hearth tests".into())];
    let backend = backend_with(endpoint);
    let mut request = CompletionRequest::new(
        "qwen",
        vec![Message::system("be brief"), Message::user("hi")],
    );
    request.max_tokens = Some(128);
    collect_request(&backend, request).await;

    let seen = server.wait_requests(1, WAIT).await;
    let sent = &seen[0];
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(sent.header("x-title"), Some("hearth tests"));
    assert_eq!(
        sent.header("user-agent"),
        Some(concat!("hearth/", env!("CARGO_PKG_VERSION")))
    );
    assert_eq!(
        sent.body,
        json!({
            "model": "qwen",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "hi"},
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": 128,
        })
    );
}

#[tokio::test]
async fn tools_images_and_tool_turns_are_sent_natively() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::text(&["ok"]));
    let mut user = Message::user("what is this?");
    user.content.push(ContentPart::Image {
        mime_type: "image/jpeg".into(),
        data: "/9j/4AAQ".into(),
    });
    let mut assistant = Message::assistant("Looking.");
    assistant.reasoning = Some("private chain of thought".into());
    assistant.tool_calls = vec![NativeToolCall {
        id: "call_1".into(),
        name: "read_file".into(),
        arguments: "{\"path\":\"a\"}".into(),
    }];
    let mut result = Message::text(Role::Tool, "contents");
    result.tool_call_id = Some("call_1".into());
    let mut request = CompletionRequest::new("qwen", vec![user, assistant, result]);
    request.tools = vec![ToolSpec {
        name: "read_file".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }];
    request.temperature = Some(0.25);
    request.stop = vec!["</done>".into()];
    collect_request(&backend(&server), request).await;

    let body = &server.wait_requests(1, WAIT).await[0].body;
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"}},
            ]},
            {"role": "assistant", "content": "Looking.", "tool_calls": [{
                "id": "call_1", "type": "function",
                "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"},
            }]},
            {"role": "tool", "content": "contents", "tool_call_id": "call_1"},
        ])
    );
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["function"]["name"], "read_file");
    assert_eq!(body["tools"][0]["function"]["parameters"]["type"], "object");
    assert_eq!(body["temperature"], 0.25);
    assert_eq!(body["stop"], json!(["</done>"]));
    assert!(!body.to_string().contains("private chain of thought"));
}

#[tokio::test]
async fn models_are_listed_with_the_context_window_each_server_reports() {
    let server = FakeServer::start().await.unwrap();
    server.set_models(json!({"object": "list", "data": [
        {"id": "Qwen/Qwen3-8B", "object": "model", "max_model_len": 32768},
        {"id": "qwen/qwen3-coder", "context_length": 262144},
        {"id": "qwen3.gguf", "meta": {"n_ctx_train": 40960, "n_params": 8000000000u64}},
        {"id": "qwen3:8b", "object": "model", "owned_by": "library"},
    ]}));
    let backend = backend(&server);
    let models = backend.list_models().await.unwrap();
    let window = |id: &str, n: Option<u32>| ModelInfo {
        context_window: n,
        ..ModelInfo::new(id)
    };
    assert_eq!(
        models,
        vec![
            window("Qwen/Qwen3-8B", Some(32768)),
            window("qwen/qwen3-coder", Some(262144)),
            window("qwen3.gguf", Some(40960)),
            window("qwen3:8b", None),
        ]
    );
    let seen = server.requests();
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path.as_str()),
        ("GET", "/v1/models")
    );
    // Describing a model reads the same list: vLLM's field names the server, another
    // server's field is only what the list says.
    let vllm = backend.describe("Qwen/Qwen3-8B").await;
    assert_eq!(vllm.window, Some((32768, WindowSource::Vllm)));
    assert_eq!(vllm.server, ServerKind::Vllm);
    let gguf = backend.describe("qwen3.gguf").await;
    assert_eq!(gguf.window, Some((40960, WindowSource::Listed)));
    assert_eq!(gguf.server, ServerKind::Unknown);
    assert!(!gguf.exact_token_counts);
    assert_eq!(backend.describe("qwen3:8b").await.window, None);
}

#[tokio::test]
async fn finished_streams_leave_their_connection_reusable() {
    let server = FakeServer::start().await.unwrap();
    let backend = backend(&server);
    for _ in 0..3 {
        server.push(Reply::text(&["again"]));
        events(&backend).await;
    }
    assert_eq!(server.requests().len(), 3);
    assert_eq!(server.connections(), 1);
}

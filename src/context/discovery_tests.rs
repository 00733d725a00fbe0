//! Window discovery against fake llama.cpp, vLLM, LM Studio and Ollama servers on loopback.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::*;
use crate::config::{EndpointConfig, Timeouts};
use crate::parse::ToolFormat;

/// One request the fake received: method, path, lower-cased head, body.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    head: String,
    body: String,
}

/// A tiny HTTP/1.1 server: answers `(method, path)` routes with JSON, everything else 404.
struct Fake {
    base_url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

async fn fake(routes: Vec<(&'static str, &'static str, Value)>) -> Fake {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let routes = Arc::new(routes);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (routes, log) = (Arc::clone(&routes), Arc::clone(&log));
            tokio::spawn(async move { serve(stream, &routes, &log).await });
        }
    });
    Fake { base_url, seen }
}

async fn serve(
    mut stream: TcpStream,
    routes: &[(&'static str, &'static str, Value)],
    log: &Mutex<Vec<Seen>>,
) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap());
    while buf.len() < head_end + length {
        let n = stream.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let request_line = head.lines().next().unwrap_or_default().to_string();
    let mut words = request_line.split(' ');
    let method = words.next().unwrap_or_default().to_uppercase();
    let path = words.next().unwrap_or_default().to_string();
    let body = String::from_utf8_lossy(&buf[head_end..]).to_string();
    log.lock().unwrap().push(Seen {
        method: method.clone(),
        path: path.clone(),
        head: head.clone(),
        body,
    });
    let route = routes
        .iter()
        .find(|(m, p, _)| *m == method && p.to_lowercase() == path);
    let (status, body) = match route {
        Some((_, _, value)) => ("200 OK", value.to_string()),
        None => ("404 Not Found", r#"{"error":"not found"}"#.to_string()),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

fn endpoint(base_url: &str, context_window: Option<u32>) -> EndpointConfig {
    EndpointConfig {
        name: "test".into(),
        base_url: base_url.into(),
        api_key: Some("secret-key".into()),
        model: None,
        context_window,
        max_tokens: None,
        tokenizer: None,
        tool_format: ToolFormat::Auto,
        headers: vec![("x-extra".into(), "yes".into())],
        timeouts: Timeouts::default(),
    }
}

async fn discover(fake: &Fake, model: &str, configured: Option<u32>) -> WindowInfo {
    let http = reqwest::Client::new();
    discover_window(&http, &endpoint(&fake.base_url, configured), model, None).await
}

#[tokio::test]
async fn llama_cpp_props_n_ctx() {
    let server = fake(vec![(
        "GET",
        "/props",
        json!({"default_generation_settings": {"n_ctx": 16384}, "total_slots": 1}),
    )])
    .await;
    let info = discover(&server, "qwen", None).await;
    assert_eq!(info.tokens, 16384);
    assert_eq!(info.source, WindowSource::LlamaCpp);
    assert_eq!(info.server, ServerKind::LlamaCpp);
    assert_eq!(ollama_num_ctx(&info), None);
    // The probes carry the endpoint's key and headers.
    let seen = server.seen.lock().unwrap().clone();
    let props = seen.iter().find(|s| s.path == "/props").unwrap();
    assert!(props.head.contains("authorization: bearer secret-key"));
    assert!(props.head.contains("x-extra: yes"));
}

#[tokio::test]
async fn llama_cpp_top_level_n_ctx() {
    let server = fake(vec![("GET", "/props", json!({"n_ctx": 4096}))]).await;
    let info = discover(&server, "qwen", None).await;
    assert_eq!((info.tokens, info.source), (4096, WindowSource::LlamaCpp));
}

#[tokio::test]
async fn vllm_max_model_len_of_the_model() {
    let server = fake(vec![(
        "GET",
        "/v1/models",
        json!({"object": "list", "data": [
            {"id": "other", "max_model_len": 4096},
            {"id": "Qwen/Qwen3-8B", "max_model_len": 40960}
        ]}),
    )])
    .await;
    let info = discover(&server, "Qwen/Qwen3-8B", None).await;
    assert_eq!(info.tokens, 40960);
    assert_eq!(info.source, WindowSource::Vllm);
    assert_eq!(info.server, ServerKind::Vllm);
    assert_eq!(info.request_context_window(), None);
}

#[tokio::test]
async fn lm_studio_loaded_context_length() {
    let server = fake(vec![
        // LM Studio also serves /v1/models, without max_model_len.
        ("GET", "/v1/models", json!({"data": [{"id": "qwen3-8b"}]})),
        (
            "GET",
            "/api/v0/models/qwen3-8b",
            json!({"id": "qwen3-8b", "state": "loaded", "max_context_length": 40960,
                   "loaded_context_length": 12288}),
        ),
    ])
    .await;
    let info = discover(&server, "qwen3-8b", None).await;
    assert_eq!(info.tokens, 12288);
    assert_eq!(info.source, WindowSource::LmStudio);
    assert_eq!(info.server, ServerKind::LmStudio);
}

#[tokio::test]
async fn lm_studio_max_context_when_not_loaded() {
    let server = fake(vec![(
        "GET",
        "/api/v0/models/m",
        json!({"id": "m", "state": "not-loaded", "max_context_length": 32768}),
    )])
    .await;
    let info = discover(&server, "m", None).await;
    assert_eq!((info.tokens, info.source), (32768, WindowSource::LmStudio));
}

#[tokio::test]
async fn ollama_show_num_ctx_and_detection() {
    let server = fake(vec![
        (
            "GET",
            "/v1/models",
            json!({"data": [{"id": "qwen2.5-coder:7b"}]}),
        ),
        (
            "POST",
            "/api/show",
            json!({"parameters": "stop \"<|im_end|>\"\nnum_ctx                        8192",
                   "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768}}),
        ),
    ])
    .await;
    let info = discover(&server, "qwen2.5-coder:7b", None).await;
    assert_eq!(info.tokens, 8192);
    assert_eq!(info.source, WindowSource::Ollama);
    assert_eq!(info.server, ServerKind::Ollama);
    // Ollama must be told the window with every request.
    assert_eq!(ollama_num_ctx(&info), Some(8192));
    assert_eq!(info.request_context_window(), Some(8192));
    let seen = server.seen.lock().unwrap().clone();
    let show = seen.iter().find(|s| s.path == "/api/show").unwrap();
    assert_eq!(show.method, "POST");
    let body: Value = serde_json::from_str(&show.body).unwrap();
    assert_eq!(body, json!({"model": "qwen2.5-coder:7b"}));
}

#[tokio::test]
async fn ollama_loaded_context_wins() {
    let server = fake(vec![
        (
            "POST",
            "/api/show",
            json!({"parameters": "num_ctx 8192",
                   "model_info": {"qwen3.context_length": 40960}}),
        ),
        (
            "GET",
            "/api/ps",
            json!({"models": [
                {"name": "other:1b", "model": "other:1b", "context_length": 2048},
                {"name": "qwen3:8b", "model": "qwen3:8b", "context_length": 16384}
            ]}),
        ),
    ])
    .await;
    let info = discover(&server, "qwen3:8b", None).await;
    assert_eq!((info.tokens, info.source), (16384, WindowSource::Ollama));
    assert_eq!(ollama_num_ctx(&info), Some(16384));
}

#[tokio::test]
async fn ollama_trained_length_is_capped() {
    let server = fake(vec![(
        "POST",
        "/api/show",
        json!({"model_info": {"general.architecture": "qwen2", "qwen2.context_length": 131072}}),
    )])
    .await;
    let info = discover(&server, "qwen", None).await;
    assert_eq!(info.tokens, 32768);
    assert_eq!(ollama_num_ctx(&info), Some(32768));
}

#[tokio::test]
async fn config_wins_but_the_server_is_still_recognised() {
    let server = fake(vec![(
        "POST",
        "/api/show",
        json!({"model_info": {"llama.context_length": 8192}}),
    )])
    .await;
    let info = discover(&server, "qwen", Some(20_000)).await;
    assert_eq!(info.tokens, 20_000);
    assert_eq!(info.source, WindowSource::Config);
    // The configured window is what Ollama must be told to use.
    assert_eq!(ollama_num_ctx(&info), Some(20_000));
}

#[tokio::test]
async fn nothing_reported_falls_back_to_listed_then_default() {
    let server = fake(Vec::new()).await;
    let info = discover(&server, "qwen", None).await;
    assert_eq!(info.tokens, DEFAULT_WINDOW);
    assert_eq!(info.source, WindowSource::Default);
    assert_eq!(info.server, ServerKind::Unknown);
    let http = reqwest::Client::new();
    let listed =
        discover_window(&http, &endpoint(&server.base_url, None), "qwen", Some(4096)).await;
    assert_eq!(
        (listed.tokens, listed.source),
        (4096, WindowSource::Backend)
    );
}

#[tokio::test]
async fn unreachable_server_falls_back_and_port_11434_means_ollama() {
    // Bind and drop a listener so the port is closed.
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let http = reqwest::Client::new();
    let info = discover_window(&http, &endpoint(&url, None), "m", None).await;
    assert_eq!(
        (info.tokens, info.source),
        (DEFAULT_WINDOW, WindowSource::Default)
    );
    assert_eq!(info.server, ServerKind::Unknown);

    let ollama_url = "http://127.0.0.1:11434/v1";
    let info = discover_window(&http, &endpoint(ollama_url, Some(16_384)), "m", None).await;
    assert_eq!(info.server, ServerKind::Ollama);
    assert_eq!(ollama_num_ctx(&info), Some(16_384));
}

#[test]
fn local_engine_window_without_probing() {
    let info = window_without_server(None, Some(32_768));
    assert_eq!((info.tokens, info.source), (32_768, WindowSource::Backend));
    let info = window_without_server(Some(8000), Some(32_768));
    assert_eq!((info.tokens, info.source), (8000, WindowSource::Config));
    let info = window_without_server(None, None);
    assert_eq!(
        (info.tokens, info.source),
        (DEFAULT_WINDOW, WindowSource::Default)
    );
    assert_eq!(ollama_num_ctx(&info), None);
}

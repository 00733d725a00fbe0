//! Describing a model against fake llama.cpp, vLLM, LM Studio and Ollama servers on loopback:
//! each server's window from its own dialect, and which server it is.

use hearth_backend::{Backend, ModelDescription, ServerKind, WindowSource};
use hearth_openai::OpenAiBackend;
use hearth_testkit::FakeServer;
use serde_json::json;

use crate::common::*;

async fn describe(server: &FakeServer, model: &str) -> ModelDescription {
    let mut endpoint = endpoint_at(&server.base_url());
    endpoint.api_key = Some(KEY.into());
    endpoint.headers = vec![("x-extra".into(), "yes".into())];
    OpenAiBackend::new(endpoint).unwrap().describe(model).await
}

#[tokio::test]
async fn llama_cpp_props_n_ctx_with_the_endpoints_key_and_headers() {
    let server = FakeServer::start().await.unwrap();
    server.set_json(
        "GET",
        "/props",
        json!({"default_generation_settings": {"n_ctx": 16384}, "total_slots": 1}),
    );
    let info = describe(&server, "qwen").await;
    assert_eq!(info.window, Some((16384, WindowSource::LlamaCpp)));
    assert_eq!(info.server, ServerKind::LlamaCpp);
    assert!(!info.exact_token_counts && info.settled);
    let seen = server.requests();
    let props = seen.iter().find(|s| s.path == "/props").unwrap();
    assert_eq!(
        props.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(props.header("x-extra"), Some("yes"));
}

#[tokio::test]
async fn llama_cpp_top_level_n_ctx() {
    let server = FakeServer::start().await.unwrap();
    server.set_json("GET", "/props", json!({"n_ctx": 4096}));
    let info = describe(&server, "qwen").await;
    assert_eq!(info.window, Some((4096, WindowSource::LlamaCpp)));
}

#[tokio::test]
async fn vllm_max_model_len_of_the_model() {
    let server = FakeServer::start().await.unwrap();
    server.set_models(json!({"object": "list", "data": [
        {"id": "other", "max_model_len": 4096},
        {"id": "Qwen/Qwen3-8B", "max_model_len": 40960}
    ]}));
    let info = describe(&server, "Qwen/Qwen3-8B").await;
    assert_eq!(info.window, Some((40960, WindowSource::Vllm)));
    assert_eq!(info.server, ServerKind::Vllm);
}

#[tokio::test]
async fn lm_studio_loaded_context_length() {
    let server = FakeServer::start().await.unwrap();
    // LM Studio also serves /v1/models, without max_model_len.
    server.set_models(json!({"data": [{"id": "qwen3-8b"}]}));
    server.set_json(
        "GET",
        "/api/v0/models/qwen3-8b",
        json!({"id": "qwen3-8b", "state": "loaded", "max_context_length": 40960,
               "loaded_context_length": 12288}),
    );
    let info = describe(&server, "qwen3-8b").await;
    assert_eq!(info.window, Some((12288, WindowSource::LmStudio)));
    assert_eq!(info.server, ServerKind::LmStudio);
}

#[tokio::test]
async fn lm_studio_max_context_when_not_loaded() {
    let server = FakeServer::start().await.unwrap();
    server.set_json(
        "GET",
        "/api/v0/models/m",
        json!({"id": "m", "state": "not-loaded", "max_context_length": 32768}),
    );
    let info = describe(&server, "m").await;
    assert_eq!(info.window, Some((32768, WindowSource::LmStudio)));
}

#[tokio::test]
async fn ollama_show_num_ctx_and_detection() {
    let server = FakeServer::start().await.unwrap();
    server.set_models(json!({"data": [{"id": "qwen2.5-coder:7b"}]}));
    server.set_json(
        "POST",
        "/api/show",
        json!({"parameters": "stop \"<|im_end|>\"\nnum_ctx                        8192",
               "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768}}),
    );
    let info = describe(&server, "qwen2.5-coder:7b").await;
    assert_eq!(info.window, Some((8192, WindowSource::Ollama)));
    assert_eq!(info.server, ServerKind::Ollama);
    let seen = server.requests();
    let show = seen.iter().find(|s| s.path == "/api/show").unwrap();
    assert_eq!(show.method, "POST");
    assert_eq!(show.body, json!({"model": "qwen2.5-coder:7b"}));
}

#[tokio::test]
async fn ollama_loaded_context_wins() {
    let server = FakeServer::start().await.unwrap();
    server.set_json(
        "POST",
        "/api/show",
        json!({"parameters": "num_ctx 8192", "model_info": {"qwen3.context_length": 40960}}),
    );
    server.set_json(
        "GET",
        "/api/ps",
        json!({"models": [
            {"name": "other:1b", "model": "other:1b", "context_length": 2048},
            {"name": "qwen3:8b", "model": "qwen3:8b", "context_length": 16384}
        ]}),
    );
    let info = describe(&server, "qwen3:8b").await;
    assert_eq!(info.window, Some((16384, WindowSource::Ollama)));
}

#[tokio::test]
async fn ollama_trained_length_is_capped() {
    let server = FakeServer::start().await.unwrap();
    server.set_json(
        "POST",
        "/api/show",
        json!({"model_info": {"general.architecture": "qwen2", "qwen2.context_length": 131072}}),
    );
    let info = describe(&server, "qwen").await;
    assert_eq!(info.window, Some((32768, WindowSource::Ollama)));
}

#[tokio::test]
async fn nothing_reported_is_unknown_and_another_servers_list_is_last() {
    let server = FakeServer::start().await.unwrap();
    let info = describe(&server, "qwen").await;
    assert_eq!(info, ModelDescription::unknown());
    server.set_models(json!({"data": [{"id": "qwen", "context_length": 4096}]}));
    let info = describe(&server, "qwen").await;
    assert_eq!(info.window, Some((4096, WindowSource::Listed)));
    assert_eq!(info.server, ServerKind::Unknown);
}

#[tokio::test]
async fn an_unreachable_server_is_unknown_and_port_11434_means_ollama() {
    // Bind and drop a listener so the port is closed.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let info = OpenAiBackend::new(endpoint_at(&url))
        .unwrap()
        .describe("m")
        .await;
    assert_eq!(info, ModelDescription::unknown());

    let ollama = OpenAiBackend::new(endpoint_at("http://127.0.0.1:11434/v1")).unwrap();
    assert_eq!(ollama.describe("m").await.server, ServerKind::Ollama);
}

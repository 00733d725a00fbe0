//! Builds the backends for the configured endpoints: OpenAI-compatible servers, and the
//! in-process engine as the endpoint `local`.

use std::sync::Arc;

use hearth_backend::BackendError;
use hearth_local::{EngineConfig, Isolation, LazyLocalBackend, ModelSource, WorkerCommand};
use hearth_openai::{OpenAiBackend, OpenAiEndpoint};

use crate::agent::{Catalog, Endpoint};
use crate::cli::ENGINE_WORKER;
use crate::config::{Config, EndpointConfig, LOCAL_ENDPOINT, LocalSettings, Timeouts};
use crate::parse::ToolFormat;

/// Answers longer than this are cut on the local engine unless asked otherwise: a small model
/// on a CPU should not ramble for minutes.
const LOCAL_MAX_TOKENS: u32 = 2048;

pub fn build_catalog(config: &Config) -> Result<Catalog, BackendError> {
    let mut endpoints = Vec::new();
    for endpoint in &config.endpoints {
        let backend = OpenAiBackend::new(openai_endpoint(endpoint))?;
        endpoints.push(Endpoint {
            config: endpoint.clone(),
            backend: Arc::new(backend),
        });
    }
    if let Some(local) = &config.local {
        endpoints.push(local_endpoint(local));
    }
    Ok(Catalog::new(endpoints))
}

fn openai_endpoint(config: &EndpointConfig) -> OpenAiEndpoint {
    let mut endpoint = OpenAiEndpoint::new(config.name.clone(), config.base_url.clone());
    endpoint.api_key = config.api_key.clone();
    endpoint.headers = config.headers.clone();
    endpoint.connect_timeout = config.timeouts.connect;
    endpoint.first_token_timeout = config.timeouts.first_token;
    endpoint.idle_timeout = config.timeouts.idle;
    endpoint
}

/// The engine starts (and the default model downloads) on the first prompt, not here.
fn local_endpoint(local: &LocalSettings) -> Endpoint {
    let source = local
        .model
        .clone()
        .map_or(ModelSource::Default, ModelSource::File);
    let (max_context, prefill_chunk) = (local.max_context, local.prefill_chunk);
    // Where the cache directory is unknown, the system prompt is simply read every session.
    let prefix_dir = (local.prompt_cache != Some(false))
        .then(hearth_local::fetch::prefixes_dir)
        .and_then(Result::ok);
    let backend = LazyLocalBackend::new(source, move |path| {
        let mut engine = EngineConfig::new(path);
        engine.max_context = max_context.map(|n| n as usize);
        engine.prefill_chunk = prefill_chunk.map(|n| n as usize);
        engine.prefix_dir = prefix_dir.clone();
        // On a GPU the model runs in a worker process this binary serves, so a sticky CUDA
        // fault costs a reload, not the whole agent.
        engine.isolation = WorkerCommand::this_program([ENGINE_WORKER])
            .map_or(Isolation::Thread, |w| {
                Isolation::for_device(engine.device, w)
            });
        engine
    });
    let config = EndpointConfig {
        name: LOCAL_ENDPOINT.to_string(),
        base_url: "local".to_string(),
        api_key: None,
        model: Some(backend.model_id()),
        context_window: local.max_context,
        max_tokens: Some(local.max_tokens.unwrap_or(LOCAL_MAX_TOKENS)),
        temperature: local.temperature,
        tokenizer: None,
        // The engine renders ChatML itself; tools travel in-band, the Qwen way.
        tool_format: ToolFormat::Hermes,
        headers: Vec::new(),
        timeouts: Timeouts::default(),
    };
    Endpoint {
        config,
        backend: Arc::new(backend),
    }
}

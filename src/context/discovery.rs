//! The context window of a model, from the most trusted source that knows it: the endpoint's
//! configuration, what the server reports (llama.cpp, vLLM, LM Studio, Ollama), what the
//! backend listed (the local engine's own), or else a small default that is logged as an
//! assumption. Never 128k by default: assuming a window the server does not have is how
//! peers overflow small local models.

use super::probes;
use crate::config::EndpointConfig;

/// Window assumed when nothing reports one: small enough for any server hearth talks to.
pub const DEFAULT_WINDOW: u32 = 8192;

/// Ollama's default port, the fallback to tell it apart when `/api/show` cannot be probed.
const OLLAMA_PORT: &str = ":11434";

/// Where the window came from, most trusted first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowSource {
    /// `context_window` in the endpoint's configuration.
    Config,
    /// llama.cpp `/props` `n_ctx`.
    LlamaCpp,
    /// vLLM `/v1/models` `max_model_len`.
    Vllm,
    /// LM Studio `/api/v0/models/{model}` loaded (or maximum) context length.
    LmStudio,
    /// Ollama: the loaded model's context (`/api/ps`), else its `num_ctx` (`/api/show`), else
    /// its trained length capped at 32k.
    Ollama,
    /// What the backend listed for the model (the local engine's own window).
    Backend,
    /// Nothing reported a window; [`DEFAULT_WINDOW`] is assumed.
    Default,
}

/// Which server answers the endpoint, as far as the probes could tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerKind {
    LlamaCpp,
    Vllm,
    LmStudio,
    /// Ollama uses its own default context (2k–4k) unless each request sends `options.num_ctx`.
    Ollama,
    /// Another server, or one that answered no probe.
    Unknown,
}

/// A model's window and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowInfo {
    pub tokens: u32,
    pub source: WindowSource,
    pub server: ServerKind,
}

impl WindowInfo {
    /// The window to put in [`hearth_backend::CompletionRequest::context_window`]: `Some` only
    /// for Ollama, which otherwise silently cuts the prompt to its own default `num_ctx`.
    pub fn request_context_window(&self) -> Option<u32> {
        ollama_num_ctx(self)
    }
}

/// The `options.num_ctx` to send with every request, when the server is Ollama.
///
/// Ollama honours `options.num_ctx` on its native `/api/chat`; its OpenAI-compatible
/// `/v1/chat/completions` ignores it (ollama/ollama#2722, #7063), so the backend has to send
/// Ollama requests natively for the window to take effect, or the window must already be
/// what the loaded model runs with (which `/api/ps` reports and discovery prefers).
pub fn ollama_num_ctx(info: &WindowInfo) -> Option<u32> {
    (info.server == ServerKind::Ollama).then_some(info.tokens)
}

/// Finds the window of `model` on `endpoint`. `listed` is what the backend reported
/// ([`hearth_backend::ModelInfo::context_window`]). Probes run concurrently with short
/// timeouts; a probe that fails just leaves its source out.
pub async fn discover_window(
    http: &reqwest::Client,
    endpoint: &EndpointConfig,
    model: &str,
    listed: Option<u32>,
) -> WindowInfo {
    let (llama, vllm, lm_studio, ollama) = futures::join!(
        probes::llama_cpp(http, endpoint),
        probes::vllm(http, endpoint, model),
        probes::lm_studio(http, endpoint, model),
        probes::ollama(http, endpoint, model),
    );
    let server = if ollama.is_some() || endpoint.base_url.contains(OLLAMA_PORT) {
        ServerKind::Ollama
    } else if llama.is_some() {
        ServerKind::LlamaCpp
    } else if lm_studio.is_some() {
        ServerKind::LmStudio
    } else if vllm.is_some() {
        ServerKind::Vllm
    } else {
        ServerKind::Unknown
    };
    let reported = [
        (llama, WindowSource::LlamaCpp),
        (vllm, WindowSource::Vllm),
        (lm_studio, WindowSource::LmStudio),
        (ollama.and_then(|o| o.window()), WindowSource::Ollama),
    ]
    .into_iter()
    .find_map(|(tokens, source)| tokens.map(|t| (t, source)));
    let info = choose(endpoint.context_window, reported, listed, server);
    tracing::info!(
        endpoint = %endpoint.name,
        model,
        tokens = info.tokens,
        source = ?info.source,
        server = ?info.server,
        "context window"
    );
    info
}

/// The window without probing, for the local engine: the configured one, else the engine's.
pub fn window_without_server(configured: Option<u32>, listed: Option<u32>) -> WindowInfo {
    choose(configured, None, listed, ServerKind::Unknown)
}

fn choose(
    configured: Option<u32>,
    reported: Option<(u32, WindowSource)>,
    listed: Option<u32>,
    server: ServerKind,
) -> WindowInfo {
    let (tokens, source) = configured
        .filter(|t| *t > 0)
        .map(|t| (t, WindowSource::Config))
        .or(reported)
        .or_else(|| {
            listed
                .filter(|t| *t > 0)
                .map(|t| (t, WindowSource::Backend))
        })
        .unwrap_or_else(|| {
            tracing::warn!(
                tokens = DEFAULT_WINDOW,
                "no context window configured or reported; assuming {DEFAULT_WINDOW} tokens \
                 (set `context_window` for the endpoint to use more)"
            );
            (DEFAULT_WINDOW, WindowSource::Default)
        });
    WindowInfo {
        tokens,
        source,
        server,
    }
}

#[cfg(test)]
#[path = "discovery_tests.rs"]
mod tests;

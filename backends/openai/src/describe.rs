//! [`describe`]: a model's context window from what its server reports, and which server it
//! is. Each server has its own dialect: llama.cpp `/props`, vLLM's `max_model_len` in the model
//! list, LM Studio's `/api/v0/models`, Ollama's `/api/show` and `/api/ps`. The probes run
//! concurrently with short timeouts; one that fails just leaves its source out. Knowing the
//! server is Ollama also chooses the wire: from then on, requests go to its native chat.

use hearth_backend::{ModelDescription, ServerKind, WindowSource};

use crate::models::{self, Listed};
use crate::probes;
use crate::shared::Shared;

/// Ollama's default port, the fallback to tell it apart when `/api/show` cannot be probed.
const OLLAMA_PORT: &str = ":11434";

/// Whether `base_url` looks like Ollama before anything was asked: its default port.
pub(crate) fn ollama_by_port(base_url: &str) -> bool {
    base_url.contains(OLLAMA_PORT)
}

pub(crate) async fn describe(shared: &Shared, model: &str) -> ModelDescription {
    let listing = async {
        match tokio::time::timeout(shared.probe_timeout(), models::fetch(shared)).await {
            Ok(Ok(listed)) => listed,
            Ok(Err(err)) => {
                tracing::debug!("window probe failed: {err}");
                Vec::new()
            }
            Err(_elapsed) => Vec::new(),
        }
    };
    let (llama, listed, lm_studio, ollama) = futures::join!(
        probes::llama_cpp(shared),
        listing,
        probes::lm_studio(shared, model),
        probes::ollama(shared, model),
    );
    let listed = entry_for(&listed, model);
    let vllm = listed
        .filter(|l| l.source == Some(WindowSource::Vllm))
        .and_then(|l| l.info.context_window);
    let server = if ollama.is_some() || ollama_by_port(&shared.endpoint.base_url) {
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
    let window = [
        (llama.and_then(|l| l.n_ctx), WindowSource::LlamaCpp),
        (vllm, WindowSource::Vllm),
        (lm_studio, WindowSource::LmStudio),
        (ollama.and_then(|o| o.window()), WindowSource::Ollama),
        (
            listed.and_then(|l| l.info.context_window),
            WindowSource::Listed,
        ),
    ]
    .into_iter()
    .find_map(|(tokens, source)| tokens.filter(|t| *t > 0).map(|t| (t, source)));
    shared.set_server(server);
    ModelDescription {
        window,
        server,
        exact_token_counts: false,
        settled: true,
        opens_in_reasoning: llama.and_then(|l| l.opens_in_reasoning),
    }
}

/// The list entry of `model`, or the only entry of a server that serves one model under
/// another name (vLLM's `--served-model-name`).
fn entry_for<'a>(listed: &'a [Listed], model: &str) -> Option<&'a Listed> {
    listed
        .iter()
        .find(|l| l.info.id == model)
        .or_else(|| (listed.len() == 1).then(|| &listed[0]))
}

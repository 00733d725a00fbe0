//! [`Shared`]: what every request of one backend shares: the endpoint, the HTTP client, the
//! URLs, and what describing its models found out about the server.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hearth_backend::ServerKind;

use crate::config::OpenAiEndpoint;

/// Longest wait for one window probe. Local servers answer these in milliseconds.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// What every request of one backend shares.
pub(crate) struct Shared {
    pub endpoint: Arc<OpenAiEndpoint>,
    pub client: reqwest::Client,
    pub chat_url: String,
    pub models_url: String,
    /// Ollama's native chat, used for requests that carry a context window.
    pub ollama_chat_url: String,
    /// Whether the server is Ollama: from the port at first, then from what describing a
    /// model found. Requests to Ollama that carry a window go to its native chat.
    pub(crate) ollama: AtomicBool,
}

impl Shared {
    pub(crate) fn is_ollama(&self) -> bool {
        self.ollama.load(Ordering::Relaxed)
    }

    /// Records which server describing a model found. Once Ollama, always Ollama: a server does
    /// not change its kind, and a probe that fails later (a timeout, a model `/api/show` does
    /// not know) must not move models already described onto the wire that ignores the window.
    pub(crate) fn set_server(&self, server: ServerKind) {
        if server == ServerKind::Ollama {
            self.ollama.store(true, Ordering::Relaxed);
        }
    }

    /// How long one window probe may take: short, and never past the endpoint's own wait for
    /// a first token.
    pub(crate) fn probe_timeout(&self) -> Duration {
        PROBE_TIMEOUT.min(self.endpoint.first_token_timeout)
    }
}

//! Which API one request goes to, and its serialized body.
//!
//! A request with a `context_window` to a server known to be Ollama (by its port, or by what
//! describing a model found) goes to Ollama's native `/api/chat`: Ollama's OpenAI-compatible
//! endpoint ignores `options.num_ctx` (ollama/ollama#2722, #7063), so only the native API makes
//! the window stick. Every other server gets the OpenAI wire, and the window is not sent.

use bytes::Bytes;
use hearth_backend::{BackendError, CompletionRequest};
use serde::Serialize;

use crate::ollama_request::ollama_body;
use crate::request::chat_body;
use crate::shared::Shared;

/// The wire format of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    /// `POST {base}/chat/completions`, answered with SSE.
    OpenAi,
    /// `POST {root}/api/chat` with `options.num_ctx`, answered with NDJSON.
    OllamaNative { num_ctx: u32 },
}

impl Wire {
    /// For logs.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::OllamaNative { .. } => "ollama",
        }
    }
}

/// Where one request goes and in which format.
#[derive(Debug)]
pub(crate) struct Route {
    pub wire: Wire,
    pub url: String,
}

impl Route {
    pub(crate) fn for_request(shared: &Shared, request: &CompletionRequest) -> Self {
        match request.context_window {
            Some(num_ctx) if shared.is_ollama() => Self {
                wire: Wire::OllamaNative { num_ctx },
                url: shared.ollama_chat_url.clone(),
            },
            _ => Self {
                wire: Wire::OpenAi,
                url: shared.chat_url.clone(),
            },
        }
    }

    /// The JSON body for this route.
    pub(crate) fn body(&self, request: &CompletionRequest) -> Result<Bytes, BackendError> {
        match self.wire {
            Wire::OpenAi => to_bytes(&chat_body(request)),
            Wire::OllamaNative { num_ctx } => to_bytes(&ollama_body(request, num_ctx)),
        }
    }
}

fn to_bytes(body: &impl Serialize) -> Result<Bytes, BackendError> {
    serde_json::to_vec(body)
        .map(Bytes::from)
        .map_err(|err| BackendError::Internal(format!("serializing the request body: {err}")))
}

//! Which API one request goes to, and its serialized body.

use bytes::Bytes;
use hearth_backend::{BackendError, CompletionRequest};
use serde::Serialize;

use crate::backend::Shared;
use crate::request::chat_body;

/// The wire format of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    /// `POST {base}/chat/completions`, answered with SSE.
    OpenAi,
}

impl Wire {
    /// For logs.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
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
    pub(crate) fn for_request(shared: &Shared, _request: &CompletionRequest) -> Self {
        Self {
            wire: Wire::OpenAi,
            url: shared.chat_url.clone(),
        }
    }

    /// The JSON body for this route.
    pub(crate) fn body(&self, request: &CompletionRequest) -> Result<Bytes, BackendError> {
        match self.wire {
            Wire::OpenAi => to_bytes(&chat_body(request)),
        }
    }
}

fn to_bytes(body: &impl Serialize) -> Result<Bytes, BackendError> {
    serde_json::to_vec(body)
        .map(Bytes::from)
        .map_err(|err| BackendError::Internal(format!("serializing the request body: {err}")))
}

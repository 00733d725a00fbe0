//! [`OpenAiBackend`]: the HTTP client for one endpoint behind the [`Backend`] seam.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use async_trait::async_trait;
use hearth_backend::{
    Backend, BackendError, CompletionRequest, EventStream, ModelDescription, ModelInfo,
};
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};
use tokio_util::sync::CancellationToken;

use crate::config::OpenAiEndpoint;
use crate::describe::ollama_by_port;
use crate::redact::redact;
use crate::shared::Shared;

/// A [`Backend`] that talks to one OpenAI-compatible endpoint. Cheap to clone; clones share
/// the connection pool.
#[derive(Clone)]
pub struct OpenAiBackend {
    shared: Arc<Shared>,
}

impl OpenAiBackend {
    /// Checks the endpoint (an `http`/`https` base URL, valid header names and values) and
    /// builds its HTTP client. Fails with [`BackendError::InvalidRequest`] naming what is wrong
    /// (never echoing the API key); nothing touches the network yet.
    pub fn new(endpoint: OpenAiEndpoint) -> Result<Self, BackendError> {
        let base = endpoint.base().to_string();
        let url = reqwest::Url::parse(&base)
            .map_err(|err| invalid(&endpoint, format!("base_url `{base}` is not a URL: {err}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(invalid(
                &endpoint,
                format!("base_url `{base}` must start with http:// or https://"),
            ));
        }
        let client = reqwest::Client::builder()
            .connect_timeout(endpoint.connect_timeout)
            .user_agent(concat!("hearth/", env!("CARGO_PKG_VERSION")))
            .default_headers(headers(&endpoint)?)
            .build()
            .map_err(|err| BackendError::Internal(format!("building the HTTP client: {err}")))?;
        Ok(Self {
            shared: Arc::new(Shared {
                chat_url: format!("{base}/chat/completions"),
                models_url: format!("{base}/models"),
                ollama_chat_url: format!("{}/api/chat", endpoint.root()),
                ollama: AtomicBool::new(ollama_by_port(&endpoint.base_url)),
                endpoint: Arc::new(endpoint),
                client,
            }),
        })
    }

    /// The endpoint this backend talks to.
    pub fn endpoint(&self) -> &OpenAiEndpoint {
        &self.shared.endpoint
    }
}

impl std::fmt::Debug for OpenAiBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The endpoint's own Debug redacts the key.
        f.debug_struct("OpenAiBackend")
            .field("endpoint", &self.shared.endpoint)
            .finish_non_exhaustive()
    }
}

/// The message may quote the base URL: its password is redacted.
fn invalid(endpoint: &OpenAiEndpoint, what: String) -> BackendError {
    let what = redact(endpoint, &what);
    BackendError::InvalidRequest(format!("endpoint `{}`: {what}", endpoint.name))
}

fn headers(endpoint: &OpenAiEndpoint) -> Result<HeaderMap, BackendError> {
    let mut map = HeaderMap::new();
    for (name, value) in &endpoint.headers {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| invalid(endpoint, format!("`{name}` is not a valid header name")))?;
        let mut value = HeaderValue::from_str(value).map_err(|_| {
            invalid(
                endpoint,
                format!("the value of header `{name}` is not valid"),
            )
        })?;
        // Extra headers often carry tokens too; keep them out of debug output.
        value.set_sensitive(true);
        map.append(header, value);
    }
    if let Some(key) = &endpoint.api_key {
        let mut value = HeaderValue::from_str(&format!("Bearer {key}"))
            .map_err(|_| invalid(endpoint, "the API key is not a valid header value".into()))?;
        value.set_sensitive(true);
        map.insert(AUTHORIZATION, value);
    }
    Ok(map)
}

#[async_trait]
impl Backend for OpenAiBackend {
    fn stream(&self, request: CompletionRequest, cancel: CancellationToken) -> EventStream {
        crate::stream::completion(self.shared.clone(), request, cancel)
    }

    async fn list_models(&self) -> Result<Vec<ModelInfo>, BackendError> {
        crate::models::list(&self.shared).await
    }

    async fn describe(&self, model: &str) -> ModelDescription {
        let description = crate::describe::describe(&self.shared, model).await;
        tracing::info!(
            endpoint = %self.shared.endpoint.name,
            model,
            window = ?description.window,
            server = ?description.server,
            "described the model"
        );
        description
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_urls_and_headers_are_refused_without_echoing_the_key() {
        let bad_scheme = OpenAiBackend::new(OpenAiEndpoint::new("e", "ftp://h/v1"));
        assert!(
            matches!(bad_scheme, Err(BackendError::InvalidRequest(m)) if m.contains("http://"))
        );
        assert!(OpenAiBackend::new(OpenAiEndpoint::new("e", "not a url")).is_err());

        let mut endpoint = OpenAiEndpoint::new("e", "http://h/v1/");
        endpoint.api_key = Some("sk-abc\n".into());
        let Err(BackendError::InvalidRequest(message)) = OpenAiBackend::new(endpoint) else {
            panic!("a newline in the key must be refused");
        };
        assert!(!message.contains("sk-abc"));

        let mut endpoint = OpenAiEndpoint::new("e", "http://h/v1/");
        endpoint.headers = vec![("bad header".into(), "v".into())];
        assert!(OpenAiBackend::new(endpoint).is_err());

        let endpoint = OpenAiEndpoint::new("e", "ftp://me:pass-word@h/v1");
        let Err(BackendError::InvalidRequest(message)) = OpenAiBackend::new(endpoint) else {
            panic!("ftp must be refused");
        };
        assert!(!message.contains("pass-word"), "{message}");
        assert!(message.contains("ftp://***@h/v1"), "{message}");
    }

    #[test]
    fn urls_are_joined_under_the_base() {
        let backend = OpenAiBackend::new(OpenAiEndpoint::new("e", "http://h:1/v1/")).unwrap();
        assert_eq!(backend.shared.chat_url, "http://h:1/v1/chat/completions");
        assert_eq!(backend.shared.models_url, "http://h:1/v1/models");
        assert_eq!(backend.shared.ollama_chat_url, "http://h:1/api/chat");
    }
}

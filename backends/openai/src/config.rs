//! How to reach one OpenAI-compatible endpoint.

use std::time::Duration;

/// One OpenAI-compatible endpoint and the limits hearth applies to it.
///
/// `base_url` is the URL up to and including the API version segment, e.g.
/// `http://localhost:1234/v1` (LM Studio), `http://localhost:11434/v1` (Ollama),
/// `http://localhost:8080/v1` (llama.cpp server), `https://openrouter.ai/api/v1`. A trailing
/// slash is tolerated. hearth appends `/chat/completions` and `/models` to it.
#[derive(Clone, PartialEq)]
pub struct OpenAiEndpoint {
    /// The endpoint's name in the config; errors name it.
    pub name: String,
    /// See the type's docs.
    pub base_url: String,
    /// Sent as `Authorization: Bearer <key>`. Never logged, and scrubbed from error messages.
    pub api_key: Option<String>,
    /// Extra headers sent with every request (e.g. `HTTP-Referer` for OpenRouter).
    pub headers: Vec<(String, String)>,
    /// Limit on establishing the TCP (and TLS) connection.
    pub connect_timeout: Duration,
    /// Limit from sending a request to the first model output (text, reasoning, tool call,
    /// usage or finish). Covers waiting for the response headers and the prompt prefill, so
    /// it is generous by default.
    pub first_token_timeout: Duration,
    /// Limit on silence between two SSE events once output has started.
    pub idle_timeout: Duration,
    /// How many times a `429 Too Many Requests` is retried before the stream fails with
    /// `RateLimited`. Retries only happen before anything was streamed.
    pub max_rate_limit_retries: u32,
    /// Cap on each wait before a 429 retry, whatever `Retry-After` asks for.
    pub max_retry_wait: Duration,
}

impl OpenAiEndpoint {
    /// An endpoint with no key, no extra headers and the default limits: connect 10 s, first
    /// token 300 s, idle 120 s, 3 rate-limit retries waiting at most 30 s each.
    pub fn new(name: impl Into<String>, base_url: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            base_url: base_url.into(),
            api_key: None,
            headers: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            first_token_timeout: Duration::from_secs(300),
            idle_timeout: Duration::from_secs(120),
            max_rate_limit_retries: 3,
            max_retry_wait: Duration::from_secs(30),
        }
    }

    /// The base URL without a trailing slash.
    pub(crate) fn base(&self) -> &str {
        self.base_url.trim_end_matches('/')
    }

    /// The server root: the base URL without its trailing `/v1` (`http://h:11434/v1` →
    /// `http://h:11434`), where the servers' own APIs live (`/props`, `/api/show`, `/api/chat`).
    /// A base that does not end in `/v1` is the root itself.
    pub(crate) fn root(&self) -> &str {
        let base = self.base();
        base.strip_suffix("/v1").unwrap_or(base)
    }
}

// Hand-written so no secret (the key, header values, a password in the URL) reaches a log
// through `{:?}`.
impl std::fmt::Debug for OpenAiEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("OpenAiEndpoint")
            .field("name", &self.name)
            .field("base_url", &crate::redact::redact(self, &self.base_url))
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("headers", &header_names)
            .field("connect_timeout", &self.connect_timeout)
            .field("first_token_timeout", &self.first_token_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_rate_limit_retries", &self.max_rate_limit_retries)
            .field("max_retry_wait", &self.max_retry_wait)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_drops_a_trailing_v1_only() {
        let root = |base: &str| OpenAiEndpoint::new("e", base).root().to_string();
        assert_eq!(root("http://h:11434/v1"), "http://h:11434");
        assert_eq!(root("http://h:11434/v1/"), "http://h:11434");
        assert_eq!(root("http://h:11434"), "http://h:11434");
        assert_eq!(root("https://h/ollama/v1"), "https://h/ollama");
        assert_eq!(root("http://h/api/v1"), "http://h/api");
        assert_eq!(root("http://h/v1beta"), "http://h/v1beta");
    }

    #[test]
    fn debug_never_shows_the_key_or_header_values() {
        let mut endpoint = OpenAiEndpoint::new("lan", "http://me:pass-word@h/v1/");
        endpoint.api_key = Some("sk-secret".into());
        endpoint.headers = vec![("X-Token".into(), "hidden-value".into())];
        let shown = format!("{endpoint:?}");
        for secret in ["sk-secret", "hidden-value", "pass-word", "me:pass"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(shown.contains("X-Token"));
        assert!(shown.contains("http://***@h/v1/"), "{shown}");
        assert_eq!(endpoint.base(), "http://me:pass-word@h/v1");
    }
}

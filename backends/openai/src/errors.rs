//! Maps what went wrong on the wire to [`BackendError`], keeping credentials out of messages
//! (through [`crate::redact`]).

use std::error::Error as _;
use std::time::Duration;

use hearth_backend::{BackendError, TimeoutStage};
use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::config::OpenAiEndpoint;
use crate::overflow::stated_counts;
use crate::redact::redact;

/// Longest body snippet an error carries, in characters (an ellipsis included).
pub(crate) const SNIPPET_CHARS: usize = 300;

/// A short excerpt of an error body, its secrets redacted (before it is cut, so no half of a
/// secret survives): the `error.message` of an OpenAI-style error object when there is one (it
/// is what a person wants to read), else the body itself.
pub(crate) fn snippet(endpoint: &OpenAiEndpoint, body: &str) -> String {
    let parsed = serde_json::from_str::<Value>(body).ok();
    let text = parsed
        .as_ref()
        .and_then(error_message)
        .unwrap_or_else(|| body.trim().to_string());
    let clean = redact(endpoint, &text);
    if clean.chars().count() <= SNIPPET_CHARS {
        return clean;
    }
    let kept: String = clean.chars().take(SNIPPET_CHARS - 1).collect();
    format!("{kept}…")
}

fn error_message(body: &Value) -> Option<String> {
    let error = body.get("error").unwrap_or(body);
    match error {
        Value::String(message) => Some(message.clone()),
        _ => error
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string),
    }
}

fn says_context_exceeded(text: &str) -> bool {
    const MARKERS: [&str; 6] = [
        "context length",
        "context_length",
        "context size",
        "context window",
        "maximum context",
        "exceed_context",
    ];
    let lower = text.to_ascii_lowercase();
    MARKERS.iter().any(|m| lower.contains(m))
}

/// The error for a non-2xx answer (429 handled by the caller's retry loop first).
pub(crate) fn http(
    endpoint: &OpenAiEndpoint,
    model: &str,
    status: u16,
    body: &str,
) -> BackendError {
    // The whole body is searched: servers put the marker in `code` or `type` as often as in
    // the message.
    let overflow = matches!(status, 400 | 413) && says_context_exceeded(body);
    if overflow {
        let counts = stated_counts(body);
        return BackendError::ContextWindowExceeded {
            model: model.to_string(),
            detail: snippet(endpoint, body),
            prompt_tokens: counts.prompt_tokens,
            window: counts.window,
        };
    }
    let body = snippet(endpoint, body);
    BackendError::Http {
        endpoint: endpoint.name.clone(),
        status,
        body,
    }
}

/// The error for an error object sent inside the stream (`data: {"error": ...}`, or Ollama's
/// `{"error": "..."}` line). Its `code` is used as the status when it is an HTTP status; without
/// one it counts as 400 when it says the context was exceeded (so it becomes
/// `ContextWindowExceeded`), else 500. A 429 there is `RateLimited` (not retried: output may
/// already have been streamed).
pub(crate) fn in_stream(endpoint: &OpenAiEndpoint, model: &str, error: &Value) -> BackendError {
    let status = error
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (400..600).contains(c))
        .unwrap_or_else(|| {
            if says_context_exceeded(&error.to_string()) {
                400
            } else {
                500
            }
        });
    if status == 429 {
        return BackendError::RateLimited {
            endpoint: endpoint.name.clone(),
            retry_after: None,
        };
    }
    let wrapped = serde_json::json!({ "error": error });
    http(endpoint, model, status, &wrapped.to_string())
}

/// The error for a request that got no response.
pub(crate) fn send(endpoint: &OpenAiEndpoint, err: &reqwest::Error) -> BackendError {
    if err.is_connect() && refused(err) {
        return BackendError::ConnectionRefused {
            endpoint: endpoint.name.clone(),
            url: redact(endpoint, endpoint.base()),
        };
    }
    if err.is_connect() && err.is_timeout() {
        return BackendError::Timeout {
            endpoint: endpoint.name.clone(),
            stage: TimeoutStage::Connect,
            after: endpoint.connect_timeout,
        };
    }
    transport(endpoint, err)
}

/// Any other network failure, with the whole cause chain in the message.
pub(crate) fn transport(
    endpoint: &OpenAiEndpoint,
    err: &(dyn std::error::Error + 'static),
) -> BackendError {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    BackendError::Transport {
        endpoint: endpoint.name.clone(),
        message: redact(endpoint, &message),
    }
}

fn refused(err: &reqwest::Error) -> bool {
    let mut source = err.source();
    while let Some(cause) = source {
        if cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
        {
            return true;
        }
        source = cause.source();
    }
    false
}

/// How long a 429 asks to wait: `retry-after-ms` (OpenAI) or `retry-after` in seconds.
/// HTTP-date values are not understood and count as absent.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    number("retry-after-ms")
        .map(|ms| Duration::from_secs_f64(ms / 1000.0))
        .or_else(|| number("retry-after").map(Duration::from_secs_f64))
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    fn endpoint() -> OpenAiEndpoint {
        let mut endpoint = OpenAiEndpoint::new("lan", "http://h/v1");
        endpoint.api_key = Some("sk-123".into());
        endpoint
    }

    #[test]
    fn snippet_prefers_the_error_message_scrubs_and_truncates() {
        let e = endpoint();
        let body = r#"{"error":{"message":"bad key sk-123","type":"auth"}}"#;
        assert_eq!(snippet(&e, body), "bad key <redacted>");
        assert_eq!(
            snippet(&e, "  plain sk-123 text \n"),
            "plain <redacted> text"
        );
        let long = "é".repeat(400);
        let cut = snippet(&e, &long);
        assert_eq!(cut.chars().count(), SNIPPET_CHARS);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn context_overflow_is_recognised_in_the_wording_of_each_server() {
        let e = endpoint();
        for body in [
            "This model's maximum context length is 4096 tokens. However, you requested 5000",
            r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#,
            r#"{"error":{"message":"x","code":"context_length_exceeded"}}"#,
        ] {
            let err = http(&e, "qwen", 400, body);
            assert!(
                matches!(err, BackendError::ContextWindowExceeded { ref model, .. } if model == "qwen"),
                "{body}: {err:?}"
            );
        }
        let other = http(&e, "qwen", 400, "unknown parameter foo");
        assert!(matches!(other, BackendError::Http { status: 400, .. }));
        let server = http(&e, "qwen", 500, "context length");
        assert!(matches!(server, BackendError::Http { status: 500, .. }));
    }

    #[test]
    fn retry_after_reads_milliseconds_then_seconds() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)));
        headers.remove("retry-after-ms");
        headers.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn in_stream_errors_use_their_code_when_it_is_a_status() {
        let e = endpoint();
        let err = in_stream(
            &e,
            "m",
            &serde_json::json!({"message": "overloaded", "code": 503}),
        );
        assert_eq!(
            err,
            BackendError::Http {
                endpoint: "lan".into(),
                status: 503,
                body: "overloaded".into()
            }
        );
        let err = in_stream(
            &e,
            "m",
            &serde_json::json!({"message": "boom", "code": "x"}),
        );
        assert!(matches!(err, BackendError::Http { status: 500, .. }));
        // Ollama sends a bare string.
        let err = in_stream(&e, "m", &serde_json::json!("model runner crashed"));
        assert!(
            matches!(err, BackendError::Http { status: 500, ref body, .. } if body == "model runner crashed"),
            "{err:?}"
        );
        let err = in_stream(
            &e,
            "m",
            &serde_json::json!("input length exceeds the context length"),
        );
        assert!(
            matches!(err, BackendError::ContextWindowExceeded { .. }),
            "{err:?}"
        );
    }
}

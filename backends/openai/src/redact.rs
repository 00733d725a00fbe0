//! The one place that keeps an endpoint's secrets out of what hearth shows or logs: every
//! error message built from server-supplied text or from a URL, and every trace of the
//! server's frames, goes through [`Secrets::redact`].
//!
//! The secrets are the API key, the values of the extra headers, and the user name and
//! password of a base URL written `http://user:pw@host/v1`. A server may echo any of them
//! (a 401 quoting the header it refused), so each is replaced by `<redacted>` wherever it
//! appears, and the user-info part of any URL is shown as `***`.
//!
//! A header value or URL user name shorter than [`MIN_SECRET`] bytes is not searched for:
//! such a value (`1`, `true`, `en`) cannot be a credential, and replacing every occurrence of
//! it would garble the message. The API key and a URL password are always searched for.

use crate::config::OpenAiEndpoint;

/// What stands in for a secret.
pub(crate) const REDACTED: &str = "<redacted>";

/// What stands in for the user info of a URL.
const HIDDEN_USERINFO: &str = "***";

/// Shortest header value (or URL user name) treated as a secret, in bytes.
pub(crate) const MIN_SECRET: usize = 8;

/// The secret values of one endpoint, longest first (so a secret that contains another is
/// replaced whole).
#[derive(Default)]
pub(crate) struct Secrets {
    values: Vec<String>,
}

// Hand-written: the whole point is not to print them.
impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({} values, <redacted>)", self.values.len())
    }
}

impl Secrets {
    /// The secrets `endpoint` holds.
    pub(crate) fn of(endpoint: &OpenAiEndpoint) -> Self {
        let mut values: Vec<String> = Vec::new();
        values.extend(endpoint.api_key.iter().cloned());
        let headers = endpoint.headers.iter().map(|(_, value)| value);
        values.extend(headers.filter(|v| v.len() >= MIN_SECRET).cloned());
        if let Some((user, password)) = userinfo(&endpoint.base_url) {
            for raw in [Some(password), (user.len() >= MIN_SECRET).then_some(user)]
                .into_iter()
                .flatten()
            {
                let decoded = percent_decoded(raw);
                values.push(raw.to_string());
                values.extend(decoded.filter(|d| d != raw));
            }
        }
        values.retain(|v| !v.trim().is_empty());
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        Self { values }
    }

    /// `text` with every secret replaced by `<redacted>` and every URL's user info by `***`.
    pub(crate) fn redact(&self, text: &str) -> String {
        let mut clean = hide_userinfo(text);
        for secret in &self.values {
            if clean.contains(secret.as_str()) {
                clean = clean.replace(secret.as_str(), REDACTED);
            }
        }
        clean
    }
}

/// `text` with the secrets of `endpoint` replaced (see [`Secrets::redact`]).
pub(crate) fn redact(endpoint: &OpenAiEndpoint, text: &str) -> String {
    Secrets::of(endpoint).redact(text)
}

/// The `(user, password)` of a URL's authority, as written (percent-encoded); either may be
/// empty. `None` when the URL has no user info.
fn userinfo(url: &str) -> Option<(&str, &str)> {
    let start = url.find("://")? + 3;
    let authority = &url[start..];
    let end = authority.find(['/', '?', '#']).unwrap_or(authority.len());
    let (info, _host) = authority[..end].rsplit_once('@')?;
    Some(info.split_once(':').unwrap_or((info, "")))
}

/// Every `scheme://user:pw@host` in `text` written `scheme://***@host`.
fn hide_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| c.is_whitespace() || "/?#\"'<>()[]{}`,;".contains(c))
            .unwrap_or(tail.len());
        match tail[..end].rfind('@') {
            Some(last_at) => {
                out.push_str(HIDDEN_USERINFO);
                rest = &tail[last_at..];
            }
            None => rest = tail,
        }
    }
    out.push_str(rest);
    out
}

/// `text` with `%XX` escapes decoded, when that changes it and gives valid UTF-8.
fn percent_decoded(text: &str) -> Option<String> {
    if !text.contains('%') {
        return None;
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint() -> OpenAiEndpoint {
        let mut endpoint = OpenAiEndpoint::new("lan", "https://alice-the-user:p%40ss-w0rd@h:8/v1");
        endpoint.api_key = Some("sk-123".into());
        endpoint.headers = vec![
            ("X-Token".into(), "header-secret-value".into()),
            ("X-Debug".into(), "1".into()),
        ];
        endpoint
    }

    #[test]
    fn every_secret_the_endpoint_holds_is_replaced() {
        let secrets = Secrets::of(&endpoint());
        let text = "key sk-123, Bearer sk-123, token header-secret-value, pw p@ss-w0rd \
                    and p%40ss-w0rd, user alice-the-user; debug 1";
        assert_eq!(
            secrets.redact(text),
            "key <redacted>, Bearer <redacted>, token <redacted>, pw <redacted> \
             and <redacted>, user <redacted>; debug 1"
        );
        assert!(!format!("{secrets:?}").contains("sk-123"));
    }

    #[test]
    fn url_user_info_is_hidden_wherever_a_url_appears() {
        let secrets = Secrets::default();
        assert_eq!(
            secrets.redact("error sending request for url (http://u:pw@host:1/v1/chat)"),
            "error sending request for url (http://***@host:1/v1/chat)"
        );
        assert_eq!(
            secrets.redact("`https://tok@h` and ws://a:b@c@d/x, http://plain/y?q=a@b"),
            "`https://***@h` and ws://***@d/x, http://plain/y?q=a@b"
        );
        assert_eq!(secrets.redact("no urls: a@b, ://"), "no urls: a@b, ://");
    }

    #[test]
    fn user_info_is_read_from_the_base_url() {
        assert_eq!(userinfo("http://u:p@h/v1"), Some(("u", "p")));
        assert_eq!(userinfo("http://token@h/v1"), Some(("token", "")));
        assert_eq!(userinfo("http://h/v1?x=a@b"), None);
        assert_eq!(userinfo("not a url"), None);
        assert_eq!(percent_decoded("a%40b%zz"), Some("a@b%zz".into()));
        assert_eq!(percent_decoded("plain"), None);
    }

    #[test]
    fn short_header_values_and_empty_keys_are_not_searched_for() {
        let mut endpoint = OpenAiEndpoint::new("lan", "http://h/v1");
        endpoint.api_key = Some(String::new());
        endpoint.headers = vec![("X-Mode".into(), "fast".into())];
        assert_eq!(redact(&endpoint, "fast path"), "fast path");
    }
}

//! How configuration that holds secrets is shown: API keys and header values never, URL user
//! info (`http://user:pw@host`) without its user and password. Debug output, logs and listings
//! go through here, so no code path prints a secret by accident.

use std::borrow::Cow;

use super::resolve::EndpointConfig;

const HIDDEN: &str = "<redacted>";

/// `url` without the user info before its host.
pub fn url_without_userinfo(url: &str) -> Cow<'_, str> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Cow::Borrowed(url);
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => Cow::Owned(format!("{scheme}://{HIDDEN}@{}", &rest[at + 1..])),
        None => Cow::Borrowed(url),
    }
}

impl std::fmt::Debug for EndpointConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(name, _)| (name.as_str(), HIDDEN))
            .collect();
        f.debug_struct("EndpointConfig")
            .field("name", &self.name)
            .field("base_url", &url_without_userinfo(&self.base_url))
            .field("api_key", &self.api_key.as_ref().map(|_| HIDDEN))
            .field("model", &self.model)
            .field("context_window", &self.context_window)
            .field("max_tokens", &self.max_tokens)
            .field("temperature", &self.temperature)
            .field("tokenizer", &self.tokenizer)
            .field("tool_format", &self.tool_format)
            .field("headers", &headers)
            .field("timeouts", &self.timeouts)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_is_removed_and_nothing_else() {
        let cases = [
            (
                "http://user:pw@host:8000/v1",
                "http://<redacted>@host:8000/v1",
            ),
            ("https://tok@h/v1?a=b@c", "https://<redacted>@h/v1?a=b@c"),
            ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
            ("http://h/v1/a@b", "http://h/v1/a@b"),
            ("not a url", "not a url"),
        ];
        for (url, want) in cases {
            assert_eq!(url_without_userinfo(url), want, "{url}");
        }
    }

    #[test]
    fn debug_shows_no_secret() {
        let endpoint = EndpointConfig {
            name: "e".into(),
            base_url: "http://user:hunter2pw@h/v1".into(),
            api_key: Some("sk-very-secret".into()),
            model: None,
            context_window: None,
            max_tokens: None,
            temperature: None,
            tokenizer: None,
            tool_format: Default::default(),
            headers: vec![("X-Token".into(), "tok-very-secret".into())],
            timeouts: super::super::resolve::Timeouts::default(),
        };
        let shown = format!("{endpoint:?}");
        for secret in ["hunter2pw", "sk-very-secret", "tok-very-secret", "user:"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(shown.contains("X-Token"), "{shown}");
    }
}

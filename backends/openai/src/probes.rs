//! What each kind of local server says about its context window, one probe per server.
//! Every probe answers `None` on any failure: a missing route, a timeout, a body of another
//! shape. [`crate::describe`] then falls through to the next source.

use serde_json::Value;

use crate::limits::MAX_EVENT;
use crate::redact::redact;
use crate::send::read_body;
use crate::shared::Shared;

/// Context length in Ollama's model info when the user set no `num_ctx`: the model's trained
/// length, which may be far above what fits the user's memory, so it is capped here. A larger
/// window is one `context_window` line in the config away.
pub(crate) const OLLAMA_AUTO_CAP: u32 = 32_768;

/// Sends one probe through the backend's client (its key and headers included), bounded by
/// the probe timeout; its body is read up to [`MAX_EVENT`] bytes.
async fn send(shared: &Shared, request: reqwest::RequestBuilder) -> Option<Value> {
    let timeout = shared.probe_timeout();
    let response = match request.timeout(timeout).send().await {
        Ok(response) => response,
        Err(err) => {
            let err = redact(&shared.endpoint, &err.to_string());
            tracing::debug!("window probe failed: {err}");
            return None;
        }
    };
    if !response.status().is_success() {
        let url = redact(&shared.endpoint, response.url().as_str());
        tracing::debug!(status = %response.status(), %url, "window probe refused");
        return None;
    }
    serde_json::from_str(&read_body(response, timeout, MAX_EVENT).await).ok()
}

pub(crate) fn as_u32(value: Option<&Value>) -> Option<u32> {
    value
        .and_then(Value::as_u64)
        .and_then(|v| u32::try_from(v).ok())
        .filter(|v| *v > 0)
}

/// What llama.cpp's `GET /props` says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LlamaProps {
    /// `default_generation_settings.n_ctx`, or `n_ctx` at the top.
    pub n_ctx: Option<u32>,
    /// From `chat_template`: whether each answer starts inside `<think>`.
    pub opens_in_reasoning: Option<bool>,
}

/// llama.cpp `GET /props`. `Some` means the server answered like llama.cpp.
pub(crate) async fn llama_cpp(shared: &Shared) -> Option<LlamaProps> {
    let url = format!("{}/props", shared.endpoint.root());
    let body = send(shared, shared.client.get(url)).await?;
    let n_ctx = as_u32(body.pointer("/default_generation_settings/n_ctx"))
        .or_else(|| as_u32(body.get("n_ctx")));
    let opens_in_reasoning = body
        .get("chat_template")
        .and_then(Value::as_str)
        .map(hearth_backend::template_opens_reasoning);
    (n_ctx.is_some() || opens_in_reasoning.is_some()).then_some(LlamaProps {
        n_ctx,
        opens_in_reasoning,
    })
}

/// LM Studio `GET /api/v0/models/{model}`: the loaded context length, else the maximum.
pub(crate) async fn lm_studio(shared: &Shared, model: &str) -> Option<u32> {
    let url = format!("{}/api/v0/models/{model}", shared.endpoint.root());
    let body = send(shared, shared.client.get(url)).await?;
    as_u32(body.get("loaded_context_length")).or_else(|| as_u32(body.get("max_context_length")))
}

/// What Ollama's `POST /api/show` and `GET /api/ps` say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct OllamaShow {
    /// `context_length` of the model as loaded now (`/api/ps`), if it is loaded.
    pub loaded: Option<u32>,
    /// `num_ctx` from the model's parameters (its Modelfile), if set.
    pub num_ctx: Option<u32>,
    /// `model_info.<arch>.context_length`: the length the model was trained for.
    pub trained: Option<u32>,
}

impl OllamaShow {
    /// The window to use and to send as `options.num_ctx`: what the loaded model runs with,
    /// else its Modelfile's `num_ctx`, else its trained length capped.
    pub fn window(&self) -> Option<u32> {
        self.loaded
            .or(self.num_ctx)
            .or_else(|| self.trained.map(|t| t.min(OLLAMA_AUTO_CAP)))
    }
}

/// Ollama `POST /api/show {"model": …}`. `Some` means the server answered like Ollama.
pub(crate) async fn ollama(shared: &Shared, model: &str) -> Option<OllamaShow> {
    let url = format!("{}/api/show", shared.endpoint.root());
    let request = shared
        .client
        .post(url)
        .json(&serde_json::json!({ "model": model }));
    let body = send(shared, request).await?;
    let info = body.get("model_info")?.as_object()?;
    let trained = info
        .iter()
        .find(|(k, _)| k.ends_with(".context_length"))
        .and_then(|(_, v)| as_u32(Some(v)));
    let num_ctx = body
        .get("parameters")
        .and_then(Value::as_str)
        .and_then(parse_num_ctx);
    let loaded = ollama_loaded(shared, model).await;
    Some(OllamaShow {
        loaded,
        num_ctx,
        trained,
    })
}

/// Ollama `GET /api/ps`: the context length the model is loaded with, when it is loaded.
async fn ollama_loaded(shared: &Shared, model: &str) -> Option<u32> {
    let url = format!("{}/api/ps", shared.endpoint.root());
    let body = send(shared, shared.client.get(url)).await?;
    let models = body.get("models")?.as_array()?;
    let entry = models.iter().find(|m| {
        ["name", "model"]
            .iter()
            .any(|k| m.get(*k).and_then(Value::as_str) == Some(model))
    })?;
    as_u32(entry.get("context_length"))
}

/// `num_ctx` from Ollama's parameters text (`num_ctx    8192` on a line of its own).
fn parse_num_ctx(parameters: &str) -> Option<u32> {
    parameters.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next() == Some("num_ctx"))
            .then(|| words.next()?.parse().ok())
            .flatten()
            .filter(|v: &u32| *v > 0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn num_ctx_is_read_from_parameters() {
        assert_eq!(
            parse_num_ctx("stop \"<|im_end|>\"\nnum_ctx                        8192\n"),
            Some(8192)
        );
        assert_eq!(parse_num_ctx("temperature 0.7"), None);
        assert_eq!(parse_num_ctx("num_ctx x"), None);
    }

    #[test]
    fn ollama_window_prefers_num_ctx_and_caps_the_trained_length() {
        let show = |num_ctx, trained| OllamaShow {
            loaded: None,
            num_ctx,
            trained,
        };
        assert_eq!(show(Some(8192), Some(131_072)).window(), Some(8192));
        assert_eq!(show(None, Some(131_072)).window(), Some(OLLAMA_AUTO_CAP));
        assert_eq!(show(None, Some(4096)).window(), Some(4096));
        assert_eq!(show(None, None).window(), None);
        let loaded = OllamaShow {
            loaded: Some(4096),
            ..show(Some(8192), Some(131_072))
        };
        assert_eq!(loaded.window(), Some(4096));
    }
}

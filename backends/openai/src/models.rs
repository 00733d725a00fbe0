//! `GET /models` and the context window each kind of server reports in it.

use hearth_backend::{BackendError, ModelInfo, WindowSource};
use serde_json::Value;

use crate::errors;
use crate::limits::MAX_EVENT;
use crate::redact::redact;
use crate::send::read_body;
use crate::shared::Shared;

/// One entry of the model list, and which server's field its window came from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Listed {
    pub info: ModelInfo,
    /// `Vllm` for `max_model_len`, `LmStudio` for `max_context_length`, `Listed` for another
    /// server's field; `None` without a window.
    pub source: Option<WindowSource>,
}

/// Lists the endpoint's models. The whole exchange is bounded by `first_token_timeout`.
pub(crate) async fn list(shared: &Shared) -> Result<Vec<ModelInfo>, BackendError> {
    Ok(fetch(shared).await?.into_iter().map(|l| l.info).collect())
}

/// `GET {base}/models`, parsed. The whole exchange is bounded by `first_token_timeout`.
#[tracing::instrument(name = "provider.models", skip_all, fields(endpoint = %shared.endpoint.name))]
pub(crate) async fn fetch(shared: &Shared) -> Result<Vec<Listed>, BackendError> {
    let endpoint = &shared.endpoint;
    let exchange = async {
        let response = shared
            .client
            .get(&shared.models_url)
            .send()
            .await
            .map_err(|err| errors::send(endpoint, &err))?;
        let status = response.status();
        let body = read_body(response, endpoint.idle_timeout, MAX_EVENT).await;
        if !status.is_success() {
            return Err(errors::http(endpoint, "", status.as_u16(), &body));
        }
        parse(&body).ok_or_else(|| BackendError::Transport {
            endpoint: endpoint.name.clone(),
            message: redact(
                endpoint,
                &format!(
                    "GET {} did not return a model list: {}",
                    shared.models_url,
                    errors::snippet(endpoint, &body)
                ),
            ),
        })
    };
    match tokio::time::timeout(endpoint.first_token_timeout, exchange).await {
        Ok(result) => result,
        Err(_elapsed) => Err(BackendError::Timeout {
            endpoint: endpoint.name.clone(),
            stage: hearth_backend::TimeoutStage::FirstToken,
            after: endpoint.first_token_timeout,
        }),
    }
}

/// `{"data": [...]}` or a bare array; entries without an `id` are skipped.
pub(crate) fn parse(body: &str) -> Option<Vec<Listed>> {
    let value: Value = serde_json::from_str(body).ok()?;
    let entries = value.get("data").unwrap_or(&value).as_array()?;
    Some(entries.iter().filter_map(model).collect())
}

fn model(entry: &Value) -> Option<Listed> {
    let id = entry.get("id")?.as_str()?;
    let mut info = ModelInfo::new(id);
    // vLLM/SGLang, OpenRouter/LM Studio, LM Studio's richer API, llama.cpp server.
    let window = [
        (entry.get("max_model_len"), WindowSource::Vllm),
        (entry.get("context_length"), WindowSource::Listed),
        (entry.get("max_context_length"), WindowSource::LmStudio),
        (
            entry.get("meta").and_then(|m| m.get("n_ctx_train")),
            WindowSource::Listed,
        ),
    ]
    .into_iter()
    .find_map(|(value, source)| {
        let n = value?.as_u64()?;
        Some((u32::try_from(n).unwrap_or(u32::MAX), source))
    });
    info.context_window = window.map(|(n, _)| n);
    info.quantization = entry
        .get("quantization")
        .and_then(Value::as_str)
        .map(str::to_string);
    Some(Listed {
        info,
        source: window.map(|(_, source)| source),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_servers_context_field() {
        let body = r#"{"object":"list","data":[
            {"id":"vllm","max_model_len":32768},
            {"id":"router","context_length":131072,"quantization":"fp8"},
            {"id":"llama","meta":{"n_ctx_train":40960,"n_vocab":1}},
            {"id":"plain"},
            {"object":"model"}
        ]}"#;
        let models = parse(body).unwrap();
        let got: Vec<(&str, Option<u32>, Option<WindowSource>)> = models
            .iter()
            .map(|m| (m.info.id.as_str(), m.info.context_window, m.source))
            .collect();
        assert_eq!(
            got,
            [
                ("vllm", Some(32768), Some(WindowSource::Vllm)),
                ("router", Some(131072), Some(WindowSource::Listed)),
                ("llama", Some(40960), Some(WindowSource::Listed)),
                ("plain", None, None)
            ]
        );
        assert_eq!(models[1].info.quantization.as_deref(), Some("fp8"));
    }

    #[test]
    fn bare_arrays_are_accepted_and_junk_is_not() {
        let bare = parse(r#"[{"id":"a"}]"#).unwrap();
        assert_eq!(bare[0].info, ModelInfo::new("a"));
        assert!(parse("<html>").is_none());
        assert!(parse(r#"{"data":{}}"#).is_none());
    }
}

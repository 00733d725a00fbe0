//! `GET /models` and the context window each kind of server reports.

use hearth_backend::{BackendError, ModelInfo};
use serde_json::Value;

use crate::backend::Shared;
use crate::errors;
use crate::send::read_error_body;

/// Lists the endpoint's models. The whole exchange is bounded by `first_token_timeout`.
#[tracing::instrument(name = "provider.models", skip_all, fields(endpoint = %shared.endpoint.name))]
pub(crate) async fn list(shared: &Shared) -> Result<Vec<ModelInfo>, BackendError> {
    let endpoint = &shared.endpoint;
    let exchange = async {
        let response = shared
            .client
            .get(&shared.models_url)
            .send()
            .await
            .map_err(|err| errors::send(endpoint, &err))?;
        let status = response.status();
        let body = read_error_body(response, endpoint.idle_timeout).await;
        if !status.is_success() {
            return Err(errors::http(endpoint, "", status.as_u16(), &body));
        }
        parse(&body).ok_or_else(|| BackendError::Transport {
            endpoint: endpoint.name.clone(),
            message: format!(
                "GET {} did not return a model list: {}",
                shared.models_url,
                errors::snippet(endpoint, &body)
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
pub(crate) fn parse(body: &str) -> Option<Vec<ModelInfo>> {
    let value: Value = serde_json::from_str(body).ok()?;
    let entries = value.get("data").unwrap_or(&value).as_array()?;
    Some(entries.iter().filter_map(model).collect())
}

fn model(entry: &Value) -> Option<ModelInfo> {
    let id = entry.get("id")?.as_str()?;
    let mut info = ModelInfo::new(id);
    // vLLM/SGLang, OpenRouter/LM Studio, LM Studio's richer API, llama.cpp server.
    info.context_window = [
        entry.get("max_model_len"),
        entry.get("context_length"),
        entry.get("max_context_length"),
        entry.get("meta").and_then(|m| m.get("n_ctx_train")),
    ]
    .into_iter()
    .flatten()
    .find_map(Value::as_u64)
    .map(|n| u32::try_from(n).unwrap_or(u32::MAX));
    info.quantization = entry
        .get("quantization")
        .and_then(Value::as_str)
        .map(str::to_string);
    Some(info)
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
        let got: Vec<(&str, Option<u32>)> = models
            .iter()
            .map(|m| (m.id.as_str(), m.context_window))
            .collect();
        assert_eq!(
            got,
            [
                ("vllm", Some(32768)),
                ("router", Some(131072)),
                ("llama", Some(40960)),
                ("plain", None)
            ]
        );
        assert_eq!(models[1].quantization.as_deref(), Some("fp8"));
    }

    #[test]
    fn bare_arrays_are_accepted_and_junk_is_not() {
        assert_eq!(parse(r#"[{"id":"a"}]"#).unwrap(), vec![ModelInfo::new("a")]);
        assert!(parse("<html>").is_none());
        assert!(parse(r#"{"data":{}}"#).is_none());
    }
}

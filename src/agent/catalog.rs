//! The models a session can pick: every model of every configured endpoint, with the backend
//! that serves each.

use std::sync::Arc;
use std::time::Duration;

use hearth_backend::{Backend, ModelInfo};
use hearth_conversation::ModelRef;

use crate::config::EndpointConfig;

/// How long listing one endpoint's models may take before it counts as unreachable. Short, so
/// a dead endpoint does not delay opening a session.
const LIST_TIMEOUT: Duration = Duration::from_secs(3);

/// One configured endpoint and the backend that talks to it.
pub struct Endpoint {
    pub config: EndpointConfig,
    pub backend: Arc<dyn Backend>,
}

/// One entry of the model picker.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelChoice {
    pub model: ModelRef,
    /// The id shown to clients: `endpoint:model` when there are several endpoints.
    pub value_id: String,
    pub info: ModelInfo,
}

/// What listing one endpoint gave.
#[derive(Debug, Clone)]
pub struct EndpointListing {
    pub endpoint: String,
    pub base_url: String,
    pub result: Result<Vec<ModelInfo>, String>,
}

pub struct Catalog {
    endpoints: Vec<Endpoint>,
}

impl Catalog {
    pub fn new(endpoints: Vec<Endpoint>) -> Self {
        Self { endpoints }
    }

    pub fn endpoints(&self) -> &[Endpoint] {
        &self.endpoints
    }

    pub fn endpoint(&self, name: &str) -> Option<&Endpoint> {
        self.endpoints.iter().find(|e| e.config.name == name)
    }

    /// The id clients see for `model`.
    pub fn value_id(&self, model: &ModelRef) -> String {
        if self.endpoints.len() > 1 {
            format!("{}:{}", model.endpoint, model.model)
        } else {
            model.model.clone()
        }
    }

    /// Parses a picker id (`endpoint:model`, or a bare model on the first endpoint). Ollama
    /// model ids contain `:` themselves, so the prefix counts only when it names an endpoint.
    pub fn parse_value_id(&self, id: &str) -> Option<ModelRef> {
        if let Some((endpoint, model)) = id.split_once(':')
            && !model.is_empty()
            && self.endpoint(endpoint).is_some()
        {
            return Some(ModelRef {
                endpoint: endpoint.to_string(),
                model: model.to_string(),
            });
        }
        let first = self.endpoints.first()?;
        (!id.is_empty()).then(|| ModelRef {
            endpoint: first.config.name.clone(),
            model: id.to_string(),
        })
    }

    /// Lists every endpoint concurrently. Failures are reported in the listing, not fatal.
    pub async fn list_endpoints(&self) -> Vec<EndpointListing> {
        let futures = self.endpoints.iter().map(|e| async move {
            let result = match tokio::time::timeout(LIST_TIMEOUT, e.backend.list_models()).await {
                Ok(Ok(models)) => Ok(models),
                Ok(Err(err)) => Err(err.to_string()),
                Err(_) => Err(format!("no answer within {LIST_TIMEOUT:?}")),
            };
            EndpointListing {
                endpoint: e.config.name.clone(),
                base_url: e.config.base_url.clone(),
                result,
            }
        });
        futures::future::join_all(futures).await
    }

    /// Every model of every endpoint for the picker. An endpoint that fails to list is logged
    /// and still offers its configured model, so a server that cannot list is usable.
    pub async fn choices(&self) -> Vec<ModelChoice> {
        let mut out = Vec::new();
        for (endpoint, listing) in self.endpoints.iter().zip(self.list_endpoints().await) {
            let mut models = match listing.result {
                Ok(models) => models,
                Err(err) => {
                    tracing::warn!(endpoint = %listing.endpoint, url = %listing.base_url, "cannot list models: {err}");
                    Vec::new()
                }
            };
            if let Some(configured) = &endpoint.config.model
                && !models.iter().any(|m| &m.id == configured)
            {
                models.insert(0, ModelInfo::new(configured.clone()));
            }
            for mut info in models {
                if endpoint.config.context_window.is_some() {
                    info.context_window = endpoint.config.context_window;
                }
                let model = ModelRef {
                    endpoint: endpoint.config.name.clone(),
                    model: info.id.clone(),
                };
                out.push(ModelChoice {
                    value_id: self.value_id(&model),
                    model,
                    info,
                });
            }
        }
        out
    }

    /// The model a new session starts with: the configured default, else the first endpoint's
    /// configured model, else the first listed model.
    pub fn default_model(
        &self,
        configured: Option<&str>,
        choices: &[ModelChoice],
    ) -> Option<ModelRef> {
        configured
            .and_then(|id| self.parse_value_id(id))
            .or_else(|| {
                self.endpoints.iter().find_map(|e| {
                    e.config.model.clone().map(|model| ModelRef {
                        endpoint: e.config.name.clone(),
                        model,
                    })
                })
            })
            .or_else(|| choices.first().map(|c| c.model.clone()))
    }
}

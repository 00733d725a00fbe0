//! Builds the backends for the configured endpoints.

use std::sync::Arc;

use hearth_backend::BackendError;
use hearth_openai::{OpenAiBackend, OpenAiEndpoint};

use crate::agent::{Catalog, Endpoint};
use crate::config::{Config, EndpointConfig};

pub fn build_catalog(config: &Config) -> Result<Catalog, BackendError> {
    let mut endpoints = Vec::new();
    for endpoint in &config.endpoints {
        let backend = OpenAiBackend::new(openai_endpoint(endpoint))?;
        endpoints.push(Endpoint {
            config: endpoint.clone(),
            backend: Arc::new(backend),
        });
    }
    Ok(Catalog::new(endpoints))
}

fn openai_endpoint(config: &EndpointConfig) -> OpenAiEndpoint {
    let mut endpoint = OpenAiEndpoint::new(config.name.clone(), config.base_url.clone());
    endpoint.api_key = config.api_key.clone();
    endpoint.headers = config.headers.clone();
    endpoint.connect_timeout = config.timeouts.connect;
    endpoint.first_token_timeout = config.timeouts.first_token;
    endpoint.idle_timeout = config.timeouts.idle;
    endpoint
}

//! A model on a configured endpoint: what a session runs on, what the store remembers.

use serde::{Deserialize, Serialize};

/// A model on an endpoint. Stored as `{"endpoint": …, "model": …}`; a stored model may no
/// longer exist, so whoever restores one checks it against the configured endpoints.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ModelRef {
    pub endpoint: String,
    pub model: String,
}

impl ModelRef {
    pub fn new(endpoint: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            endpoint: endpoint.into(),
            model: model.into(),
        }
    }
}

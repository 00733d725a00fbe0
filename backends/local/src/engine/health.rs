//! The model's health, shared between the engine thread and the callers so that requests to a
//! poisoned or failed model are refused at once instead of queueing.

use std::sync::{Arc, Mutex};

use crate::error::EngineError;

/// Where the model stands.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Health {
    /// Weights are loading; `fraction` in 0..=1.
    Loading {
        fraction: f32,
    },
    Healthy,
    /// A device fault poisoned the model; a reload is under way.
    Poisoned {
        cause: String,
    },
    /// A sticky device fault lost this process's device context, which no in-process reload
    /// can bring back: the engine's worker process ends and its supervisor starts a new one.
    Restarting {
        cause: String,
    },
    /// Loading failed or reloads are exhausted; the model refuses all work.
    Failed {
        reason: String,
    },
}

/// Shared, cheaply cloned handle on the health state.
#[derive(Debug, Clone)]
pub struct HealthCell(Arc<Mutex<Health>>);

impl HealthCell {
    pub fn new(initial: Health) -> Self {
        Self(Arc::new(Mutex::new(initial)))
    }

    pub fn get(&self) -> Health {
        match self.0.lock() {
            Ok(h) => h.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    pub fn set(&self, health: Health) {
        match self.0.lock() {
            Ok(mut h) => *h = health,
            Err(poisoned) => *poisoned.into_inner() = health,
        }
    }

    /// The error a new request gets now, if it must be refused.
    pub fn refusal(&self) -> Option<EngineError> {
        match self.get() {
            Health::Poisoned { cause } | Health::Restarting { cause } => {
                Some(EngineError::Poisoned { cause })
            }
            Health::Failed { reason } => Some(EngineError::Failed(reason)),
            Health::Loading { .. } | Health::Healthy => None,
        }
    }
}

/// The canary's greedy tokens once a load recorded them, shared like [`HealthCell`].
#[derive(Debug, Clone, Default)]
pub struct CanaryCell(Arc<Mutex<Option<Vec<u32>>>>);

impl CanaryCell {
    pub fn new(initial: Option<Vec<u32>>) -> Self {
        Self(Arc::new(Mutex::new(initial)))
    }

    pub fn get(&self) -> Option<Vec<u32>> {
        match self.0.lock() {
            Ok(c) => c.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Records `tokens` unless some are recorded already.
    pub fn set(&self, tokens: Vec<u32>) {
        let mut cell = match self.0.lock() {
            Ok(c) => c,
            Err(poisoned) => poisoned.into_inner(),
        };
        cell.get_or_insert(tokens);
    }
}

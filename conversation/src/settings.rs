//! The settings a user changes between prompts.

use crate::mode::Mode;
use crate::model_ref::ModelRef;

/// A session's mode and model: changed by the user at any time, stored with the session.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSettings {
    pub mode: Mode,
    pub model: Option<ModelRef>,
}

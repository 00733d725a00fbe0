//! The session's config options (model and mode pickers) and the legacy `modes` block.

use agent_client_protocol::v1::schema::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption, SessionMode,
    SessionModeState,
};

use hearth_conversation::{Mode, SessionSettings};

use super::state::AcpState;
use crate::agent::ModelChoice;

pub const MODEL_OPTION: &str = "model";
pub const MODE_OPTION: &str = "mode";

/// The full option list, as every response that carries options must send it.
pub fn config_options(
    settings: &SessionSettings,
    choices: &[ModelChoice],
    current_model_id: Option<String>,
) -> Vec<SessionConfigOption> {
    let mut options = Vec::new();
    if let Some(current) = current_model_id {
        let mut values: Vec<SessionConfigSelectOption> = choices.iter().map(model_value).collect();
        if !choices.iter().any(|c| c.value_id == current) {
            // The session's model is not listed (its endpoint is down): still show it.
            values.insert(
                0,
                SessionConfigSelectOption::new(current.clone(), current.clone()),
            );
        }
        options.push(
            SessionConfigOption::select(MODEL_OPTION, "Model", current, values)
                .category(SessionConfigOptionCategory::Model)
                .description("The model that answers, from every configured endpoint".to_string()),
        );
    }
    let modes: Vec<SessionConfigSelectOption> = Mode::ALL
        .into_iter()
        .map(|m| {
            SessionConfigSelectOption::new(m.id(), m.name())
                .description(m.description().to_string())
        })
        .collect();
    options.push(
        SessionConfigOption::select(MODE_OPTION, "Mode", settings.mode.id(), modes)
            .category(SessionConfigOptionCategory::Mode)
            .description("What hearth may do without asking".to_string()),
    );
    options
}

fn model_value(choice: &ModelChoice) -> SessionConfigSelectOption {
    let mut details = Vec::new();
    if let Some(window) = choice.info.context_window {
        details.push(format!("{window} tokens of context"));
    }
    if let Some(quant) = &choice.info.quantization {
        details.push(quant.clone());
    }
    let option = SessionConfigSelectOption::new(choice.value_id.clone(), choice.value_id.clone());
    if details.is_empty() {
        option
    } else {
        option.description(details.join(", "))
    }
}

/// The legacy modes block, for clients without config options.
pub fn mode_state(mode: Mode) -> SessionModeState {
    let modes = Mode::ALL
        .into_iter()
        .map(|m| SessionMode::new(m.id(), m.name()).description(m.description().to_string()))
        .collect();
    SessionModeState::new(mode.id(), modes)
}

/// The config options (mode and model pickers) for a session with `settings`.
pub fn options_for(state: &AcpState, settings: &SessionSettings) -> Vec<SessionConfigOption> {
    let current = settings
        .model
        .as_ref()
        .map(|m| state.core.catalog.value_id(m));
    config_options(settings, &state.choices(), current)
}

//! Edits held to what the request names (the edit_scope assist), driven through the agent
//! core with a scripted model: an edit to a setting the request never mentions is not made,
//! the model is told so in the call's result, and the assist can be turned off.

use hearth::agent::StopReason;

use crate::common::fake_backend::FakeBackend;
use crate::common::scripted_turn::{last_message, prompt_with, reply};

/// What the 0.5B sends for "Change MAX_RETRIES in settings.py to 5.".
const BOTH: &str = "<tool_call>\n{\"name\": \"edit_file\", \"arguments\": {\"path\": \"settings.py\", \"edits\": [{\"old_text\": \"TIMEOUT = 30\", \"new_text\": \"TIMEOUT = 5\"}, {\"old_text\": \"MAX_RETRIES = 3\", \"new_text\": \"MAX_RETRIES = 5\"}]}}\n</tool_call>";

async fn run(agent: &str) -> (FakeBackend, String) {
    let project = tempfile::tempdir().unwrap();
    let settings = project.path().join("settings.py");
    std::fs::write(&settings, "TIMEOUT = 30\nMAX_RETRIES = 3\n").unwrap();
    let backend = FakeBackend::default();
    reply(&backend, BOTH);
    reply(&backend, "MAX_RETRIES is now 5.");
    let words = "Change MAX_RETRIES in settings.py to 5.";
    let (stop, _) = prompt_with(&backend, project.path(), "hermes", agent, words).await;
    assert_eq!(stop, StopReason::EndTurn);
    (backend, std::fs::read_to_string(settings).unwrap())
}

#[tokio::test]
async fn an_edit_to_a_setting_the_request_never_names_is_not_made() {
    let (backend, settings) = run("").await;
    assert_eq!(settings, "TIMEOUT = 30\nMAX_RETRIES = 5\n");
    let result = last_message(&backend, 1);
    assert!(
        result.contains(
            "Not made: edit 1 (it changes TIMEOUT), which my request does not mention. Change only what I asked for."
        ),
        "{result}"
    );

    let (_, settings) = run("assists_off = [\"edit_scope\"]").await;
    assert_eq!(settings, "TIMEOUT = 5\nMAX_RETRIES = 5\n");
}

//! The requests a test client sends most, as one-liners: open a session, set its mode, prompt.

use std::path::Path;

use agent_client_protocol::Agent;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, NewSessionRequest, PromptRequest, SessionId, SetSessionConfigOptionRequest,
    StopReason,
};

pub async fn new_session(cx: &ConnectionTo<Agent>, cwd: &Path) -> SessionId {
    cx.send_request(NewSessionRequest::new(cwd.to_path_buf()))
        .block_task()
        .await
        .unwrap()
        .session_id
}

pub async fn set_mode(cx: &ConnectionTo<Agent>, sid: &SessionId, mode: &str) {
    cx.send_request(SetSessionConfigOptionRequest::new(
        sid.clone(),
        "mode",
        mode,
    ))
    .block_task()
    .await
    .unwrap();
}

pub async fn prompt(cx: &ConnectionTo<Agent>, sid: &SessionId, text: &str) -> StopReason {
    cx.send_request(PromptRequest::new(
        sid.clone(),
        vec![ContentBlock::from(text.to_string())],
    ))
    .block_task()
    .await
    .unwrap()
    .stop_reason
}

//! ACP semantics, in-process: the real agent over an in-memory channel, scripted backends.

use std::path::PathBuf;
use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ContentBlock, InitializeRequest, NewSessionRequest,
    NewSessionResponse, PromptRequest, SessionConfigKind, SessionConfigOption,
    SessionConfigOptionCategory, SessionConfigSelectOptions, SetSessionConfigOptionRequest,
    SetSessionModeRequest, StopReason,
};
use agent_client_protocol::{Agent, ErrorCode};
use hearth::acp::AcpState;
use hearth::agent::{AgentCore, Catalog, Endpoint};
use hearth::config::{ConfigSource, parse_str};
use hearth_backend::{BackendError, FinishReason};

use crate::common::acp_client::{Recorder, in_process, recording_client};
use crate::common::fake_backend::{FakeBackend, Step, finish, reasoning, text};

/// Builds the agent's state with one fake backend per `(endpoint, default model)`.
fn state(endpoints: &[(&str, &FakeBackend, &str)]) -> Arc<AcpState> {
    let toml: String = endpoints
        .iter()
        .map(|(name, _, model)| format!("[[endpoints]]\nname = \"{name}\"\nbase_url = \"http://{name}.invalid/v1\"\nmodel = \"{model}\"\n"))
        .collect();
    let config = parse_str(&toml, ConfigSource::Defaults, &|_| None).unwrap();
    let catalog = Catalog::new(
        config
            .endpoints
            .iter()
            .zip(endpoints)
            .map(|(c, (_, backend, _))| Endpoint {
                config: c.clone(),
                backend: Arc::new((*backend).clone()),
            })
            .collect(),
    );
    let data = std::env::temp_dir().join("hearth-test-data");
    Arc::new(AcpState::new(Arc::new(AgentCore::new(
        config, catalog, data,
    ))))
}

async fn open(cx: &ConnectionTo<Agent>) -> NewSessionResponse {
    cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
        .block_task()
        .await
        .unwrap();
    cx.send_request(NewSessionRequest::new(PathBuf::from("/tmp")))
        .block_task()
        .await
        .unwrap()
}

fn prompt(session: &NewSessionResponse, text: &str) -> PromptRequest {
    PromptRequest::new(
        session.session_id.clone(),
        vec![ContentBlock::from(text.to_string())],
    )
}

fn select_values(option: &SessionConfigOption) -> (String, Vec<String>) {
    let SessionConfigKind::Select(select) = &option.kind else {
        panic!("not a select: {option:?}")
    };
    let values = match &select.options {
        SessionConfigSelectOptions::Ungrouped(list) => {
            list.iter().map(|o| o.value.0.to_string()).collect()
        }
        SessionConfigSelectOptions::Grouped(groups) => groups
            .iter()
            .flat_map(|g| g.options.iter().map(|o| o.value.0.to_string()))
            .collect(),
        other => panic!("unexpected options {other:?}"),
    };
    (select.current_value.0.to_string(), values)
}

#[tokio::test]
async fn initialize_advertises_only_what_works() {
    let backend = FakeBackend::default();
    let channel = in_process(state(&[("a", &backend, "m")]));
    recording_client(Recorder::default())
        .connect_with(channel, async |cx| {
            let init = cx
                .send_request(
                    InitializeRequest::new(ProtocolVersion::V1)
                        .client_capabilities(ClientCapabilities::new()),
                )
                .block_task()
                .await?;
            assert_eq!(init.protocol_version, ProtocolVersion::V1);
            let caps = init.agent_capabilities;
            assert!(
                !caps.load_session,
                "session/load is not implemented yet, so it must not be advertised"
            );
            assert!(caps.prompt_capabilities.image);
            assert!(caps.session_capabilities.close.is_some());
            assert!(caps.session_capabilities.list.is_none());
            assert_eq!(init.agent_info.unwrap().name, "hearth");
            Ok(())
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn new_session_offers_every_model_of_every_endpoint_and_the_four_modes() {
    let a = FakeBackend::with_models(&["m1", "m1b"]);
    let b = FakeBackend::with_models(&["m2"]);
    let channel = in_process(state(&[("a", &a, "m1"), ("b", &b, "m2")]));
    recording_client(Recorder::default())
        .connect_with(channel, async |cx| {
            let session = open(&cx).await;
            let options = session.config_options.clone().unwrap();
            let model = options.iter().find(|o| o.id.0.as_ref() == "model").unwrap();
            assert_eq!(model.category, Some(SessionConfigOptionCategory::Model));
            let (current, values) = select_values(model);
            assert_eq!(current, "a:m1");
            assert_eq!(values, ["a:m1", "a:m1b", "b:m2"]);
            let mode = options.iter().find(|o| o.id.0.as_ref() == "mode").unwrap();
            assert_eq!(mode.category, Some(SessionConfigOptionCategory::Mode));
            assert_eq!(
                select_values(mode),
                (
                    "ask".to_string(),
                    vec!["ask", "accept-edits", "plan", "bypass"]
                        .into_iter()
                        .map(String::from)
                        .collect()
                )
            );
            let modes = session.modes.clone().unwrap();
            assert_eq!(modes.current_mode_id.0.as_ref(), "ask");
            assert_eq!(modes.available_modes.len(), 4);
            Ok(())
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn prompt_streams_answer_and_thoughts_then_ends_the_turn() {
    let backend = FakeBackend::with_models(&["m"]);
    backend.push(vec![
        reasoning("Let me think. "),
        reasoning("Done."),
        text("Hello, "),
        text("world!"),
        finish(FinishReason::Stop),
    ]);
    let recorder = Recorder::default();
    let channel = in_process(state(&[("a", &backend, "m")]));
    recording_client(recorder.clone())
        .connect_with(channel, async |cx| {
            let session = open(&cx).await;
            let response = cx.send_request(prompt(&session, "hi")).block_task().await?;
            assert_eq!(response.stop_reason, StopReason::EndTurn);
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(recorder.agent_text(), "Hello, world!");
    assert_eq!(recorder.thought_text(), "Let me think. Done.");
    let request = &backend.requests()[0];
    assert_eq!(request.model, "m");
    // The first prompt may carry the project's layout (the project_map assist) before it.
    assert!(
        request
            .messages
            .last()
            .unwrap()
            .plain_text()
            .ends_with("hi")
    );
}

#[tokio::test]
async fn model_option_moves_the_next_prompt_to_the_other_endpoint() {
    let a = FakeBackend::with_models(&["m1"]);
    let b = FakeBackend::with_models(&["m2"]);
    a.push(vec![text("from a"), finish(FinishReason::Stop)]);
    b.push(vec![text("from b"), finish(FinishReason::Stop)]);
    let channel = in_process(state(&[("a", &a, "m1"), ("b", &b, "m2")]));
    recording_client(Recorder::default())
        .connect_with(channel, async |cx| {
            let session = open(&cx).await;
            cx.send_request(prompt(&session, "one"))
                .block_task()
                .await?;
            let changed = cx
                .send_request(SetSessionConfigOptionRequest::new(
                    session.session_id.clone(),
                    "model",
                    "b:m2",
                ))
                .block_task()
                .await?;
            let model = changed
                .config_options
                .iter()
                .find(|o| o.id.0.as_ref() == "model")
                .unwrap();
            assert_eq!(select_values(model).0, "b:m2");
            assert_eq!(
                changed.config_options.len(),
                2,
                "the full option list comes back"
            );
            cx.send_request(prompt(&session, "two"))
                .block_task()
                .await?;
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(a.requests().len(), 1);
    let b_requests = b.requests();
    assert_eq!(b_requests.len(), 1);
    assert_eq!(b_requests[0].model, "m2");
    // The conversation carries over to the new model.
    let texts: Vec<String> = b_requests[0]
        .messages
        .iter()
        .map(|m| m.plain_text())
        .collect();
    assert!(
        texts.iter().any(|t| t.ends_with("one")) && texts.contains(&"from a".to_string()),
        "{texts:?}"
    );
}

#[tokio::test]
async fn bad_option_values_and_unknown_sessions_are_errors_and_the_agent_keeps_serving() {
    let backend = FakeBackend::with_models(&["m"]);
    backend.push(vec![text("still here"), finish(FinishReason::Stop)]);
    let recorder = Recorder::default();
    let channel = in_process(state(&[("a", &backend, "m")]));
    recording_client(recorder.clone())
        .connect_with(channel, async |cx| {
            let session = open(&cx).await;
            let sid = session.session_id.clone();
            let err = cx
                .send_request(SetSessionConfigOptionRequest::new(
                    sid.clone(),
                    "model",
                    "nope",
                ))
                .block_task()
                .await
                .unwrap_err();
            assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
            assert!(err.message.contains("nope"), "{}", err.message);
            let err = cx
                .send_request(SetSessionConfigOptionRequest::new(
                    sid.clone(),
                    "mode",
                    "yolo",
                ))
                .block_task()
                .await
                .unwrap_err();
            assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
            let err = cx
                .send_request(SetSessionConfigOptionRequest::new(
                    sid.clone(),
                    "colour",
                    "red",
                ))
                .block_task()
                .await
                .unwrap_err();
            assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
            let err = cx
                .send_request(PromptRequest::new(
                    "no-such-session",
                    vec![ContentBlock::from("hi".to_string())],
                ))
                .block_task()
                .await
                .unwrap_err();
            assert_eq!(err.code, ErrorCode::RESOURCE_NOT_FOUND);
            assert!(err.message.contains("no-such-session"));
            let mode = cx
                .send_request(SetSessionConfigOptionRequest::new(
                    sid.clone(),
                    "mode",
                    "plan",
                ))
                .block_task()
                .await?;
            let mode = mode
                .config_options
                .iter()
                .find(|o| o.id.0.as_ref() == "mode")
                .unwrap();
            assert_eq!(select_values(mode).0, "plan");
            cx.send_request(SetSessionModeRequest::new(sid.clone(), "bypass"))
                .block_task()
                .await?;
            let response = cx.send_request(prompt(&session, "hi")).block_task().await?;
            assert_eq!(response.stop_reason, StopReason::EndTurn);
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(recorder.agent_text(), "still here");
}

#[tokio::test]
async fn cancel_mid_stream_ends_the_turn_cancelled_and_drops_the_upstream_stream() {
    let backend = FakeBackend::with_models(&["m"]);
    backend.push(vec![text("partial "), Step::Hang]);
    let recorder = Recorder::default();
    let channel = in_process(state(&[("a", &backend, "m")]));
    let watch = recorder.clone();
    recording_client(recorder.clone())
        .connect_with(channel, async |cx| {
            let session = open(&cx).await;
            let sid = session.session_id.clone();
            let turn = cx.send_request(prompt(&session, "go")).block_task();
            let cancel = async {
                assert!(watch.wait_for(|r| r.agent_text() == "partial ").await);
                cx.send_notification(CancelNotification::new(sid)).unwrap();
            };
            let (response, ()) = tokio::join!(turn, cancel);
            assert_eq!(response?.stop_reason, StopReason::Cancelled);
            Ok(())
        })
        .await
        .unwrap();
    assert!(
        backend.wait_abandoned(1).await,
        "the backend stream must be dropped on cancel"
    );
}

#[tokio::test]
async fn a_second_prompt_on_a_busy_session_cancels_the_first() {
    let backend = FakeBackend::with_models(&["m"]);
    backend.push(vec![text("first "), Step::Hang]);
    backend.push(vec![text("second"), finish(FinishReason::Stop)]);
    let recorder = Recorder::default();
    let channel = in_process(state(&[("a", &backend, "m")]));
    let watch = recorder.clone();
    recording_client(recorder.clone())
        .connect_with(channel, async |cx| {
            let session = open(&cx).await;
            let first = cx.send_request(prompt(&session, "one")).block_task();
            let second = async {
                assert!(watch.wait_for(|r| r.agent_text() == "first ").await);
                cx.send_request(prompt(&session, "two")).block_task().await
            };
            let (first, second) = tokio::join!(first, second);
            assert_eq!(first?.stop_reason, StopReason::Cancelled);
            assert_eq!(second?.stop_reason, StopReason::EndTurn);
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(recorder.agent_text(), "first second");
}

#[tokio::test]
async fn backend_failures_reach_the_client_as_named_errors_and_the_next_prompt_works() {
    let backend = FakeBackend::with_models(&["m"]);
    backend.push(vec![Step::Fail(BackendError::ConnectionRefused {
        endpoint: "a".into(),
        url: "http://a.invalid/v1".into(),
    })]);
    backend.push(vec![text("hello again"), finish(FinishReason::Length)]);
    let recorder = Recorder::default();
    let channel = in_process(state(&[("a", &backend, "m")]));
    recording_client(recorder.clone())
        .connect_with(channel, async |cx| {
            let session = open(&cx).await;
            let err = cx
                .send_request(prompt(&session, "one"))
                .block_task()
                .await
                .unwrap_err();
            assert_eq!(err.code, ErrorCode::INTERNAL_ERROR);
            assert!(
                err.message
                    .contains("endpoint `a` refused the connection at http://a.invalid/v1"),
                "{}",
                err.message
            );
            let response = cx
                .send_request(prompt(&session, "two"))
                .block_task()
                .await?;
            assert_eq!(response.stop_reason, StopReason::MaxTokens);
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(recorder.agent_text(), "hello again");
}

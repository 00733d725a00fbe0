//! Mode changes are announced by every path, so a client that tracks a session from its
//! notifications alone (acpx `status`) always knows the mode: when the session opens, and after
//! `session/set_mode`, the mode picker, and `/mode`.

use std::path::PathBuf;
use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeRequest, NewSessionRequest, PromptRequest, SessionConfigKind,
    SessionUpdate, SetSessionConfigOptionRequest, SetSessionModeRequest,
};
use hearth::acp::AcpState;
use hearth::agent::{AgentCore, Catalog, Endpoint};
use hearth::config::{ConfigSource, parse_str};

use crate::common::acp_client::{Recorder, in_process, recording_client};
use crate::common::fake_backend::FakeBackend;

fn state(backend: &FakeBackend) -> Arc<AcpState> {
    let toml = "[[endpoints]]\nname = \"a\"\nbase_url = \"http://a.invalid/v1\"\nmodel = \"m\"\n";
    let config = parse_str(toml, ConfigSource::Defaults, &|_| None).unwrap();
    let catalog = Catalog::new(vec![Endpoint {
        config: config.endpoints[0].clone(),
        backend: Arc::new(backend.clone()),
    }]);
    let data = std::env::temp_dir().join("hearth-test-data");
    Arc::new(AcpState::new(Arc::new(AgentCore::new(
        config, catalog, data,
    ))))
}

/// The modes announced so far, in order.
fn modes(recorder: &Recorder) -> Vec<String> {
    recorder
        .all()
        .iter()
        .filter_map(|n| match &n.update {
            SessionUpdate::CurrentModeUpdate(u) => Some(u.current_mode_id.0.to_string()),
            _ => None,
        })
        .collect()
}

/// The mode picker's value in the last `config_option_update`.
fn picker_mode(recorder: &Recorder) -> Option<String> {
    recorder.all().iter().rev().find_map(|n| match &n.update {
        SessionUpdate::ConfigOptionUpdate(u) => {
            u.config_options
                .iter()
                .find_map(|o| match (&*o.id.0, &o.kind) {
                    ("mode", SessionConfigKind::Select(select)) => {
                        Some(select.current_value.0.to_string())
                    }
                    _ => None,
                })
        }
        _ => None,
    })
}

#[tokio::test]
async fn every_mode_change_is_announced_with_the_options() {
    let backend = FakeBackend::with_models(&["m"]);
    let recorder = Recorder::default();
    let channel = in_process(state(&backend));
    recording_client(recorder.clone())
        .connect_with(channel, async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await
                .unwrap();
            let sid = cx
                .send_request(NewSessionRequest::new(PathBuf::from("/tmp")))
                .block_task()
                .await
                .unwrap()
                .session_id;
            assert!(
                recorder.wait_for(|r| modes(r) == ["ask"]).await,
                "{:?}",
                modes(&recorder)
            );

            cx.send_request(SetSessionModeRequest::new(sid.clone(), "plan"))
                .block_task()
                .await
                .unwrap();
            assert!(recorder.wait_for(|r| modes(r) == ["ask", "plan"]).await);
            assert!(
                recorder
                    .wait_for(|r| picker_mode(r).as_deref() == Some("plan"))
                    .await
            );

            cx.send_request(SetSessionConfigOptionRequest::new(
                sid.clone(),
                "mode",
                "accept-edits",
            ))
            .block_task()
            .await
            .unwrap();
            assert!(
                recorder
                    .wait_for(|r| modes(r) == ["ask", "plan", "accept-edits"])
                    .await,
                "{:?}",
                modes(&recorder)
            );
            assert_eq!(picker_mode(&recorder).as_deref(), Some("accept-edits"));

            // Setting the mode it already has changes nothing and announces nothing.
            cx.send_request(SetSessionModeRequest::new(sid.clone(), "accept-edits"))
                .block_task()
                .await
                .unwrap();

            cx.send_request(PromptRequest::new(
                sid.clone(),
                vec![ContentBlock::from("/mode bypass".to_string())],
            ))
            .block_task()
            .await
            .unwrap();
            assert!(
                recorder
                    .wait_for(|r| modes(r) == ["ask", "plan", "accept-edits", "bypass"])
                    .await,
                "{:?}",
                modes(&recorder)
            );
            assert_eq!(picker_mode(&recorder).as_deref(), Some("bypass"));
            Ok(())
        })
        .await
        .unwrap();
}

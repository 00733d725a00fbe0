//! End to end: the real `hearth` binary, spawned and driven by the ACP SDK's client, talking to
//! fake OpenAI-compatible servers on loopback that stream real SSE bytes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, InitializeRequest, NewSessionRequest, PromptRequest,
    SetSessionConfigOptionRequest, StopReason,
};
use agent_client_protocol::{AcpAgent, AcpAgentConfig, ErrorCode};
use hearth_testkit::{DONE, FakeServer, Reply, Step, chunk_content, chunk_finish};

use crate::common::acp_client::{Recorder, recording_client};

fn hearth_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_hearth"))
}

/// A config with the given endpoints, written into `dir`.
fn write_config(dir: &Path, endpoints: &[(&str, &str, &str)]) -> PathBuf {
    let mut text = String::new();
    for (name, url, model) in endpoints {
        text.push_str(&format!(
            "[[endpoints]]\nname = \"{name}\"\nbase_url = \"{url}\"\nmodel = \"{model}\"\n[endpoints.timeouts]\nconnect_secs = 2\nfirst_token_secs = 5\nidle_secs = 5\n"
        ));
    }
    let path = dir.join("config.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn agent(config: &Path, home: &Path) -> AcpAgent {
    AcpAgent::new(
        AcpAgentConfig::new(hearth_bin())
            .args(["--config", &config.display().to_string()])
            .env("HOME", home.display().to_string())
            .env("XDG_DATA_HOME", home.join("data").display().to_string())
            .env("RUST_LOG", "warn"),
    )
}

fn prompt(session: &agent_client_protocol::v1::schema::SessionId, text: &str) -> PromptRequest {
    PromptRequest::new(session.clone(), vec![ContentBlock::from(text.to_string())])
}

#[tokio::test]
async fn chat_switch_model_cancel_and_survive_an_unreachable_endpoint() {
    let lan = FakeServer::start().await.unwrap();
    let cloud = FakeServer::start().await.unwrap();
    // An endpoint nobody listens on: bind a port, then free it.
    let dead_url = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/v1", listener.local_addr().unwrap())
    };
    lan.set_models(
        serde_json::json!({"object": "list", "data": [{"id": "qwen-lan", "object": "model"}]}),
    );
    cloud.set_models(
        serde_json::json!({"object": "list", "data": [{"id": "qwen-cloud", "object": "model"}]}),
    );
    lan.push(Reply::text(&["Hello ", "from ", "lan"]));
    cloud.push(Reply::Sse(vec![
        Step::Bytes(chunk_content("streaming...").into_bytes()),
        Step::Hang,
    ]));
    cloud.push(Reply::text(&["back ", "again"]));

    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &[
            ("lan", &lan.base_url(), "qwen-lan"),
            ("cloud", &cloud.base_url(), "qwen-cloud"),
            ("dead", &dead_url, "ghost"),
        ],
    );
    let recorder = Recorder::default();
    let watch = recorder.clone();
    recording_client(recorder.clone())
        .connect_with(agent(&config, dir.path()), async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let session = cx
                .send_request(NewSessionRequest::new(dir.path().to_path_buf()))
                .block_task()
                .await?;
            let sid = session.session_id.clone();

            // 1. A streamed prompt on the default endpoint.
            let r = cx.send_request(prompt(&sid, "hi")).block_task().await?;
            assert_eq!(r.stop_reason, StopReason::EndTurn);
            assert_eq!(watch.agent_text(), "Hello from lan");

            // 2. The model option moves the next prompt to the other endpoint.
            cx.send_request(SetSessionConfigOptionRequest::new(
                sid.clone(),
                "model",
                "cloud:qwen-cloud",
            ))
            .block_task()
            .await?;
            let turn = cx.send_request(prompt(&sid, "stream forever")).block_task();
            let cancel = async {
                assert!(
                    watch
                        .wait_for(|r| r.agent_text().ends_with("streaming..."))
                        .await
                );
                cx.send_notification(CancelNotification::new(sid.clone()))
                    .unwrap();
            };
            let (r, ()) = tokio::join!(turn, cancel);
            // 3. Cancel mid-stream: `cancelled`, and the server sees the connection dropped.
            assert_eq!(r?.stop_reason, StopReason::Cancelled);
            assert!(
                cloud.wait_dropped(1, Duration::from_secs(5)).await,
                "the upstream stream must be closed"
            );

            // 4. An unreachable endpoint gives a clear error; the next prompt still works.
            cx.send_request(SetSessionConfigOptionRequest::new(
                sid.clone(),
                "model",
                "dead:ghost",
            ))
            .block_task()
            .await?;
            let err = cx
                .send_request(prompt(&sid, "anyone?"))
                .block_task()
                .await
                .unwrap_err();
            assert_eq!(err.code, ErrorCode::INTERNAL_ERROR);
            assert!(
                err.message.contains("dead") && err.message.contains("refused"),
                "{}",
                err.message
            );
            cx.send_request(SetSessionConfigOptionRequest::new(
                sid.clone(),
                "model",
                "cloud:qwen-cloud",
            ))
            .block_task()
            .await?;
            let r = cx.send_request(prompt(&sid, "again")).block_task().await?;
            assert_eq!(r.stop_reason, StopReason::EndTurn);
            Ok(())
        })
        .await
        .unwrap();

    let lan_requests = lan.requests();
    let chat: Vec<_> = lan_requests
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect();
    assert_eq!(chat.len(), 1);
    assert_eq!(chat[0].body["model"], "qwen-lan");
    assert_eq!(chat[0].body["stream"], true);
    let cloud_chat: Vec<_> = cloud
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect();
    assert_eq!(cloud_chat.len(), 2);
    assert!(cloud_chat.iter().all(|r| r.body["model"] == "qwen-cloud"));
    assert!(recorder.agent_text().ends_with("back again"));
    let _ = (DONE, chunk_finish("stop"));
}

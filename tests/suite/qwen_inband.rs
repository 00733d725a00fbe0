//! Qwen's in-band formats end to end: the real binary parses `<think>` and Hermes `<tool_call>`
//! blocks out of streamed text cut at awkward places, runs the tool, and answers with
//! `<tool_response>`.

use std::path::PathBuf;
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeRequest, NewSessionRequest, PromptRequest, SessionUpdate, StopReason,
    ToolCallStatus,
};
use agent_client_protocol::{AcpAgent, AcpAgentConfig};
use hearth_testkit::{DONE, FakeServer, Reply, Step, chunk_content, chunk_finish};

use crate::common::acp_client::{Recorder, recording_client};

/// A reply whose text arrives in the given pieces, one SSE frame each.
fn pieces(parts: &[&str]) -> Reply {
    let mut steps: Vec<Step> = parts
        .iter()
        .map(|p| Step::Bytes(chunk_content(p).into_bytes()))
        .collect();
    steps.push(Step::Bytes(chunk_finish("stop").into_bytes()));
    steps.push(Step::Bytes(DONE.as_bytes().to_vec()));
    Reply::Sse(steps)
}

#[tokio::test]
async fn hermes_calls_split_mid_tag_are_parsed_run_and_answered() {
    let server = FakeServer::start().await.unwrap();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    server.push(pieces(&[
        "<th",
        "ink>I should read ",
        "the file.</thi",
        "nk>Reading it.\n<tool",
        "_call>\n{\"name\": \"read_",
        "file\", \"arguments\": {\"path\": \"notes.txt\"}}\n</tool_",
        "call>",
    ]));
    server.push(pieces(&["The file says ", "alpha and beta."]));
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[[endpoints]]\nname = \"lan\"\nbase_url = \"{}\"\nmodel = \"qwen2.5-coder-7b\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let agent = AcpAgent::new(
        AcpAgentConfig::new(PathBuf::from(env!("CARGO_BIN_EXE_hearth")))
            .args(["--config", &config.display().to_string()])
            .env("HOME", home.path().display().to_string())
            .env(
                "XDG_DATA_HOME",
                home.path().join("data").display().to_string(),
            ),
    );
    let recorder = Recorder::default();
    recording_client(recorder.clone())
        .connect_with(agent, async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let session = cx
                .send_request(NewSessionRequest::new(project.path().to_path_buf()))
                .block_task()
                .await?;
            let prompt = PromptRequest::new(
                session.session_id,
                vec![ContentBlock::from("What is in notes.txt?".to_string())],
            );
            let response = cx.send_request(prompt).block_task().await?;
            assert_eq!(response.stop_reason, StopReason::EndTurn);
            Ok(())
        })
        .await
        .unwrap();

    assert_eq!(recorder.thought_text(), "I should read the file.");
    let text = recorder.agent_text();
    assert!(
        !text.contains('<'),
        "no markup leaks into the answer: {text:?}"
    );
    assert_eq!(text, "Reading it.\nThe file says alpha and beta.");
    let statuses: Vec<ToolCallStatus> = recorder
        .all()
        .into_iter()
        .filter_map(|n| match n.update {
            SessionUpdate::ToolCall(c) => Some(c.status),
            SessionUpdate::ToolCallUpdate(u) => u.fields.status,
            _ => None,
        })
        .collect();
    assert_eq!(
        statuses.last(),
        Some(&ToolCallStatus::Completed),
        "{statuses:?}"
    );

    let requests = server.wait_requests(2, Duration::from_secs(5)).await;
    let chat: Vec<_> = requests
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect();
    let first = &chat[0].body;
    let system = first["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("<tools>") && system.contains("\"read_file\""),
        "the tool block is in the system prompt"
    );
    assert!(
        first.get("tools").is_none(),
        "hermes format sends no native tools"
    );
    assert!(
        first["stop"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == "<tool_response>")
    );
    let second = chat[1].body["messages"].as_array().unwrap();
    let last = second.last().unwrap();
    assert_eq!(last["role"], "user");
    let answer = last["content"].as_str().unwrap();
    assert!(
        answer.contains("<tool_response>") && answer.contains("alpha"),
        "{answer}"
    );
    // The reminder of the task rides after the result, in the same message (restate_task).
    assert!(
        answer.ends_with(
            "</tool_response>\n\n(My request was: \"What is in notes.txt?\". Answer it from the \
             tool results above; call another tool only if you still need one.)"
        ),
        "{answer}"
    );
    let assistant = &second[second.len() - 2];
    assert!(
        assistant["content"]
            .as_str()
            .unwrap()
            .contains("<tool_call>"),
        "the call is replayed inline"
    );
}

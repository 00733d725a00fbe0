//! Sessions survive the process: saved as they go, listed, loaded with full replay.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeRequest, ListSessionsRequest, LoadSessionRequest, SessionConfigKind,
    SessionNotification, SessionUpdate,
};
use agent_client_protocol::{AcpAgent, AcpAgentConfig, Client, ErrorCode, on_receive_notification};
use hearth_testkit::{FakeServer, Reply};
use serde_json::{Value, json};

struct Raw {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Raw {
    fn spawn(config: &Path, home: &Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_hearth"))
            .args(["--config", &config.display().to_string()])
            .env("HOME", home)
            .env("XDG_DATA_HOME", home.join("data"))
            .env_remove("HEARTH_DATA_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self {
            child,
            stdin,
            stdout,
        }
    }

    /// Sends a request and reads lines until its response (notifications are skipped).
    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.request_seeing(id, method, params).0
    }

    /// Sends a request; returns its response and the notifications that came before it.
    fn request_seeing(&mut self, id: u64, method: &str, params: Value) -> (Value, Vec<Value>) {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
        let mut seen = Vec::new();
        loop {
            let mut answer = String::new();
            assert!(
                self.stdout.read_line(&mut answer).unwrap() > 0,
                "agent closed stdout"
            );
            let value: Value = serde_json::from_str(&answer).unwrap();
            if value["id"] == id {
                return (value, seen);
            }
            seen.push(value);
        }
    }
}

/// A config in `dir` with one endpoint `lan` serving `qwen` from `server`, plus `extra` lines.
fn lan_config(dir: &Path, server: &FakeServer, extra: &str) -> PathBuf {
    let config = dir.join("config.toml");
    let endpoint = format!(
        "[[endpoints]]\nname = \"lan\"\nbase_url = \"{}\"\nmodel = \"qwen\"\n{extra}",
        server.base_url()
    );
    std::fs::write(&config, endpoint).unwrap();
    config
}

#[tokio::test]
async fn a_killed_agents_session_is_listed_and_loads_with_full_replay_before_the_answer() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::reasoning_then_text(
        &["Think ", "first."],
        &["The answer ", "is 42."],
    ));
    server.push(Reply::text(&["Second ", "answer."]));
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let config = lan_config(home.path(), &server, "");

    // Process one: two prompts and a mode change, then SIGKILL.
    let mut first = Raw::spawn(&config, home.path());
    first.request(
        1,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    let new = first.request(2, "session/new", json!({"cwd": project, "mcpServers": []}));
    let sid = new["result"]["sessionId"].as_str().unwrap().to_string();
    let prompt = |text: &str| json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]});
    let r = first.request(3, "session/prompt", prompt("What is the answer?"));
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let r = first.request(
        4,
        "session/set_config_option",
        json!({"sessionId": sid, "configId": "mode", "value": "accept-edits"}),
    );
    assert!(r["result"].is_object(), "{r}");
    let r = first.request(5, "session/prompt", prompt("And again?"));
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    first.child.kill().unwrap();
    first.child.wait().unwrap();

    // Process two: list, then load.
    let updates: Arc<Mutex<Vec<(bool, SessionUpdate)>>> = Arc::default();
    let answered = Arc::new(Mutex::new(false));
    let (sink, flag) = (updates.clone(), answered.clone());
    let agent = AcpAgent::new(
        AcpAgentConfig::new(env!("CARGO_BIN_EXE_hearth"))
            .args(["--config", &config.display().to_string()])
            .env("HOME", home.path().display().to_string())
            .env(
                "XDG_DATA_HOME",
                home.path().join("data").display().to_string(),
            ),
    );
    Client
        .v1()
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                let after_answer = *flag.lock().unwrap();
                sink.lock().unwrap().push((after_answer, n.update));
                Ok(())
            },
            on_receive_notification!(),
        )
        .connect_with(agent, async |cx| {
            let init = cx
                .send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            assert!(init.agent_capabilities.load_session);
            assert!(init.agent_capabilities.session_capabilities.list.is_some());
            let list = cx
                .send_request(ListSessionsRequest::new().cwd(project.clone()))
                .block_task()
                .await?;
            assert_eq!(list.sessions.len(), 1);
            let info = &list.sessions[0];
            assert_eq!(info.session_id.0.as_ref(), sid);
            assert_eq!(info.title.as_deref(), Some("What is the answer?"));
            assert!(
                chrono::DateTime::parse_from_rfc3339(info.updated_at.as_deref().unwrap()).is_ok()
            );

            let loaded = cx
                .send_request(LoadSessionRequest::new(sid.clone(), project.clone()))
                .block_task()
                .await?;
            *answered.lock().unwrap() = true;
            let options = loaded.config_options.unwrap();
            let current = |id: &str| {
                let option = options.iter().find(|o| o.id.0.as_ref() == id).unwrap();
                let SessionConfigKind::Select(select) = &option.kind else {
                    panic!()
                };
                select.current_value.0.to_string()
            };
            assert_eq!(current("mode"), "accept-edits");
            assert_eq!(current("model"), "qwen");

            let err = cx
                .send_request(LoadSessionRequest::new("../../etc/passwd", project.clone()))
                .block_task()
                .await
                .unwrap_err();
            assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
            let err = cx
                .send_request(LoadSessionRequest::new("no-such-session", project.clone()))
                .block_task()
                .await
                .unwrap_err();
            assert_eq!(err.code, ErrorCode::RESOURCE_NOT_FOUND);
            Ok(())
        })
        .await
        .unwrap();

    let updates = updates.lock().unwrap();
    // The command list and the current mode are announced after the response by design (the
    // client must know the session first); everything replayed must come before it.
    assert!(
        updates
            .iter()
            .filter(|(_, u)| !matches!(
                u,
                SessionUpdate::AvailableCommandsUpdate(_) | SessionUpdate::CurrentModeUpdate(_)
            ))
            .all(|(after, _)| !after),
        "every replayed update precedes the load response"
    );
    let text = |u: &SessionUpdate| match u {
        SessionUpdate::UserMessageChunk(c) => Some(("user", block(&c.content))),
        SessionUpdate::AgentMessageChunk(c) => Some(("agent", block(&c.content))),
        SessionUpdate::AgentThoughtChunk(c) => Some(("thought", block(&c.content))),
        _ => None,
    };
    let replay: Vec<(&str, String)> = updates.iter().filter_map(|(_, u)| text(u)).collect();
    assert_eq!(
        replay,
        [
            ("user", "What is the answer?".to_string()),
            ("thought", "Think first.".to_string()),
            ("agent", "The answer is 42.".to_string()),
            ("user", "And again?".to_string()),
            ("agent", "Second answer.".to_string()),
        ]
    );
    assert!(
        updates
            .iter()
            .any(|(_, u)| matches!(u, SessionUpdate::SessionInfoUpdate(_)))
    );
}

fn block(content: &ContentBlock) -> String {
    match content {
        ContentBlock::Text(t) => t.text.clone(),
        other => format!("{other:?}"),
    }
}

#[tokio::test]
async fn hearth_run_continue_and_sessions_cli_share_the_store() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::text(&["noted: kumquat"]));
    server.push(Reply::text(&["it was kumquat"]));
    let home = tempfile::tempdir().unwrap();
    let config = lan_config(home.path(), &server, "");
    let hearth = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_hearth"))
            .args(["--config", &config.display().to_string()])
            .args(args)
            .current_dir(home.path())
            .env("HOME", home.path())
            .env("XDG_DATA_HOME", home.path().join("data"))
            .env_remove("HEARTH_DATA_DIR")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let first: Value = serde_json::from_str(&hearth(&[
        "run",
        "--output",
        "json",
        "-p",
        "remember kumquat",
    ]))
    .unwrap();
    let second: Value = serde_json::from_str(&hearth(&[
        "run",
        "--output",
        "json",
        "--continue",
        "-p",
        "what was it?",
    ]))
    .unwrap();
    assert_eq!(first["session_id"], second["session_id"]);
    let chat: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect();
    assert!(
        chat[1].raw_body.contains("remember kumquat")
            && chat[1].raw_body.contains("noted: kumquat")
    );

    let id = first["session_id"].as_str().unwrap();
    let listed = hearth(&["sessions", "list"]);
    assert!(
        listed.contains(id) && listed.contains("2 rounds") && listed.contains("remember kumquat"),
        "{listed}"
    );
    let shown = hearth(&["sessions", "show", id]);
    assert!(
        shown.contains("> remember kumquat") && shown.contains("it was kumquat"),
        "{shown}"
    );
    hearth(&["sessions", "delete", id]);
    assert!(!hearth(&["sessions", "list", "--all-projects"]).contains(id));
}

/// Any id `session/new` returned is resumable and loadable before anyone prompts it: in the
/// same process, and in a later one. The history list stays free of sessions nobody used,
/// until the first prompt.
#[tokio::test]
async fn a_session_nobody_prompted_resumes_and_loads_but_is_not_history() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::text(&["Now it is used."]));
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let config = lan_config(home.path(), &server, "");
    let open = |agent: &mut Raw| {
        agent.request(
            1,
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        );
    };
    let listed = |agent: &mut Raw, id: u64| -> Vec<String> {
        let r = agent.request(id, "session/list", json!({}));
        r["result"]["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["sessionId"].as_str().unwrap().to_string())
            .collect()
    };
    let reopen = |agent: &mut Raw, id: u64, sid: &str| {
        let resumed = agent.request(
            id,
            "session/resume",
            json!({"sessionId": sid, "cwd": project, "mcpServers": []}),
        );
        assert!(resumed["result"].is_object(), "resume: {resumed}");
        let loaded = agent.request(
            id + 1,
            "session/load",
            json!({"sessionId": sid, "cwd": project, "mcpServers": []}),
        );
        assert!(loaded["result"].is_object(), "load: {loaded}");
    };

    let mut first = Raw::spawn(&config, home.path());
    open(&mut first);
    let new = first.request(2, "session/new", json!({"cwd": project, "mcpServers": []}));
    let sid = new["result"]["sessionId"].as_str().unwrap().to_string();
    reopen(&mut first, 3, &sid);
    assert!(listed(&mut first, 5).is_empty());
    drop(first.stdin);
    first.child.wait().unwrap();

    let mut second = Raw::spawn(&config, home.path());
    open(&mut second);
    reopen(&mut second, 2, &sid);
    assert!(
        listed(&mut second, 4).is_empty(),
        "an unused session is no history"
    );
    let prompt = json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]});
    let r = second.request(5, "session/prompt", prompt);
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert_eq!(listed(&mut second, 6), [sid]);
    second.child.kill().unwrap();
    second.child.wait().unwrap();
}

/// `session/load` and `session/resume` move the session to the request's `cwd`: commands run
/// there from then on, and the replayed view says where the conversation happened before.
#[tokio::test]
async fn a_session_reopened_in_another_directory_works_there() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::text(&["Noted."]));
    server.push(Reply::tool_call(
        "b",
        "bash",
        &[r#"{"command": "pwd > where.txt"}"#],
    ));
    server.push(Reply::text(&["Done."]));
    let home = tempfile::tempdir().unwrap();
    let base = home.path().canonicalize().unwrap();
    let (first_dir, second_dir) = (base.join("project-a"), base.join("project-b"));
    for dir in [&first_dir, &second_dir] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let config = lan_config(&base, &server, "tool_format = \"native\"\n");
    let init = json!({"protocolVersion": 1, "clientCapabilities": {}});

    let mut first = Raw::spawn(&config, &base);
    first.request(1, "initialize", init.clone());
    let new = first.request(
        2,
        "session/new",
        json!({"cwd": first_dir, "mcpServers": []}),
    );
    let sid = new["result"]["sessionId"].as_str().unwrap().to_string();
    let prompt = |text: &str| json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]});
    let mode = json!({"sessionId": sid, "configId": "mode", "value": "bypass"});
    first.request(3, "session/set_config_option", mode);
    let r = first.request(4, "session/prompt", prompt("remember this"));
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    drop(first.stdin);
    first.child.wait().unwrap();

    let mut second = Raw::spawn(&config, &base);
    second.request(1, "initialize", init);
    let load = json!({"sessionId": sid, "cwd": second_dir, "mcpServers": []});
    let (loaded, replay) = second.request_seeing(2, "session/load", load);
    assert!(loaded["result"].is_object(), "{loaded}");
    let replay = serde_json::to_string(&replay).unwrap();
    let (a, b) = (
        first_dir.display().to_string(),
        second_dir.display().to_string(),
    );
    assert!(
        replay.contains(&a) && replay.contains(&format!("from now on it works in {b}")),
        "the replay does not say the session moved: {replay}"
    );
    let r = second.request(3, "session/prompt", prompt("where are you?"));
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    second.child.kill().unwrap();
    second.child.wait().unwrap();
    let written = std::fs::read_to_string(second_dir.join("where.txt")).unwrap();
    assert_eq!(written.trim(), b);
    assert!(
        !first_dir.join("where.txt").exists(),
        "the command ran in the stored directory"
    );
}

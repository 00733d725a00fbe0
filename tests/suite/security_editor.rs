//! The security review's findings that need an editor (issue 16): the real binary over ACP,
//! driven by the SDK client playing Zed (fs and terminals advertised), against a scripted
//! hostile model on a loopback server.

use std::path::{Path, PathBuf};

use agent_client_protocol::Agent;
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{InitializeRequest, SessionId, StopReason};
use hearth_testkit::{FakeServer, Reply};
use serde_json::json;

use super::security::call;
use crate::common::acp_requests::{new_session, prompt, set_mode};
use crate::common::editor_client::{Editor, capabilities, editor_client};
use crate::common::hearth_bin::{acp_agent, write_config};
use crate::common::model_requests::{chat_requests, tool_message_by_name};

struct Project {
    _dir: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
    home: PathBuf,
}

fn project() -> Project {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let (root, home) = (base.join("project"), base.join("home"));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    Project {
        _dir: dir,
        base,
        root,
        home,
    }
}

async fn open(cx: &ConnectionTo<Agent>, root: &Path, mode: &str) -> SessionId {
    cx.send_request(
        InitializeRequest::new(ProtocolVersion::V1).client_capabilities(capabilities(true)),
    )
    .block_task()
    .await
    .unwrap();
    let sid = new_session(cx, root).await;
    set_mode(cx, &sid, mode).await;
    sid
}

/// Item 2: when the editor refuses a read (a path outside its project), that refusal stands:
/// hearth does not read the file itself behind the editor's back, even in bypass mode.
#[tokio::test]
async fn an_editor_refusal_to_read_stands() {
    let p = project();
    std::fs::write(p.home.join("id_rsa"), "PRIVATE-KEY-BYTES\n").unwrap();
    let server = FakeServer::start().await.unwrap();
    let config = write_config(&p.home, &[("fake", &server.base_url(), "m")]);
    server.push(call("r1", "read_file", json!({"path": "~/id_rsa"})));
    server.push(Reply::text(&["done"]));
    let editor = Editor::default();
    editor.refuse_reads_outside(p.root.clone());
    let root = p.root.clone();
    editor_client(editor.clone())
        .connect_with(acp_agent(&config, &p.home), async |cx| {
            let sid = open(&cx, &root, "bypass").await;
            assert_eq!(prompt(&cx, &sid, "read my key").await, StopReason::EndTurn);
            Ok(())
        })
        .await
        .unwrap();
    let bodies = chat_requests(&server);
    let last = &bodies.last().unwrap().body;
    assert!(
        tool_message_by_name(last, "read_file").contains("not found"),
        "{last}"
    );
    assert!(!last.to_string().contains("PRIVATE-KEY-BYTES"));
    assert_eq!(editor.requests("fs/read_text_file").len(), 1);
}

/// Item 3: "always allow" for `ls` covers `ls`; each of the bypasses the review found asks
/// again (and, rejected, does nothing).
#[tokio::test]
async fn always_allow_for_a_command_cannot_be_widened() {
    let p = project();
    let server = FakeServer::start().await.unwrap();
    let config = write_config(&p.home, &[("fake", &server.base_url(), "m")]);
    let lines = [
        "ls",
        "ls -la",
        "PATH=/tmp/evil:$PATH ls",
        "echo x > ../file",
        "git -c alias.x='!touch f' x",
        "find . -exec touch f {} +",
        "ls\ntouch f",
    ];
    for (i, line) in lines.iter().enumerate() {
        server.push(call(&format!("b{i}"), "bash", json!({"command": line})));
    }
    server.push(Reply::text(&["done"]));
    let editor = Editor::default();
    // The first `ls` is allowed always; the second runs without a question; every other
    // line is asked about and rejected.
    editor.answer(&["allow_always"; 1]);
    editor.answer(&["reject_once"; 5]);
    let root = p.root.clone();
    editor_client(editor.clone())
        .connect_with(acp_agent(&config, &p.home), async |cx| {
            let sid = open(&cx, &root, "accept-edits").await;
            assert_eq!(prompt(&cx, &sid, "look").await, StopReason::EndTurn);
            Ok(())
        })
        .await
        .unwrap();
    let asks = editor.requests("session/request_permission");
    assert_eq!(asks.len(), 6, "{:#?}", editor.methods());
    // The two-line command's question shows both lines.
    let last_ask = asks.last().unwrap().to_string();
    assert!(last_ask.contains("touch f"), "{last_ask}");
    assert_eq!(
        editor.requests("terminal/create").len(),
        2,
        "{:#?}",
        editor.methods()
    );
    assert!(!p.base.join("file").exists());
    assert!(!p.root.join("f").exists());
}

/// Item 8: a mode changed while a turn runs governs the turn's next call: switched to plan
/// while a command runs, the model's next write is refused.
#[tokio::test]
async fn a_mode_change_reaches_the_running_turn() {
    let p = project();
    let server = FakeServer::start().await.unwrap();
    let config = write_config(&p.home, &[("fake", &server.base_url(), "m")]);
    server.push(call("b1", "bash", json!({"command": "sleep 2"})));
    server.push(call(
        "w1",
        "write_file",
        json!({"path": "new.txt", "content": "written"}),
    ));
    server.push(Reply::text(&["done"]));
    let editor = Editor::default();
    editor.answer(&["allow_once"]);
    let (root, ed) = (p.root.clone(), editor.clone());
    editor_client(editor.clone())
        .connect_with(acp_agent(&config, &p.home), async |cx| {
            let sid = open(&cx, &root, "accept-edits").await;
            let turn = prompt(&cx, &sid, "go");
            let switch = async {
                assert!(
                    ed.wait_for(|log| log.iter().any(|l| l.method == "terminal/create"))
                        .await
                );
                set_mode(&cx, &sid, "plan").await;
            };
            let (stop, ()) = tokio::join!(turn, switch);
            assert_eq!(stop, StopReason::EndTurn);
            Ok(())
        })
        .await
        .unwrap();
    let bodies = chat_requests(&server);
    let told = tool_message_by_name(&bodies.last().unwrap().body, "write_file");
    assert!(told.contains("Plan mode"), "{told}");
    assert!(!p.root.join("new.txt").exists());
    assert!(editor.requests("fs/write_text_file").is_empty());
}

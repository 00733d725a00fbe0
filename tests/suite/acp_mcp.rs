//! MCP servers over ACP, end to end: the real `hearth` binary, a fake editor (the SDK's client),
//! a fake OpenAI-compatible server scripting the model, and a real MCP server (the
//! `hearth-mcp-fixture` binary, built on rmcp's server side) passed in `session/new`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_client_protocol::Agent;
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CloseSessionRequest, EnvVariable, HttpHeader, InitializeRequest, LoadSessionRequest, McpServer,
    McpServerHttp, McpServerStdio, NewSessionRequest, ResumeSessionRequest, SessionId, StopReason,
};
use hearth_testkit::{FakeServer, Reply};
use serde_json::{Value, json};

use crate::common::acp_requests::{self, set_mode};
use crate::common::editor_client::{Editor, capabilities, editor_client};
use crate::common::hearth_bin::{acp_agent, write_config};
use crate::common::mcp_http::McpHttp;
use crate::common::model_requests::{chat_requests, offered_tools, tool_message_by_name};
use crate::common::timeline::{Calls, lines, timeline};

fn fixture_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_hearth-mcp-fixture"))
}

struct Project {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
}

fn project() -> Project {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("project");
    let home = base.join("home");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    Project {
        _dir: dir,
        root,
        home,
    }
}

/// The fixture as a stdio server named `fixture`, writing its pid (and, with `child`, the pid
/// of a child it starts) under `dir`.
fn fixture(dir: &Path, child: bool) -> McpServer {
    let mut env = vec![EnvVariable::new(
        "MCP_FIXTURE_PID_FILE",
        dir.join("fixture.pid").display().to_string(),
    )];
    if child {
        env.push(EnvVariable::new(
            "MCP_FIXTURE_CHILD_PID_FILE",
            dir.join("child.pid").display().to_string(),
        ));
    }
    McpServer::Stdio(McpServerStdio::new("fixture", fixture_bin()).env(env))
}

fn pid(dir: &Path, file: &str) -> i32 {
    std::fs::read_to_string(dir.join(file))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Whether `pid` is a live process (a zombie waiting to be reaped counts as gone).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Waits up to 10 s for every pid to be gone.
async fn all_gone(pids: &[i32]) -> bool {
    for _ in 0..1000 {
        if pids.iter().all(|p| !alive(*p)) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

fn call(id: &str, name: &str, args: &Value) -> Reply {
    let text = args.to_string();
    Reply::tool_call(id, name, &[text.as_str()])
}

async fn init(cx: &ConnectionTo<Agent>) {
    cx.send_request(
        InitializeRequest::new(ProtocolVersion::V1).client_capabilities(capabilities(false)),
    )
    .block_task()
    .await
    .unwrap();
}

async fn new_session(cx: &ConnectionTo<Agent>, cwd: &Path, servers: Vec<McpServer>) -> SessionId {
    cx.send_request(NewSessionRequest::new(cwd.to_path_buf()).mcp_servers(servers))
        .block_task()
        .await
        .unwrap()
        .session_id
}

async fn prompt(cx: &ConnectionTo<Agent>, sid: &SessionId) -> StopReason {
    acp_requests::prompt(cx, sid, "use the fixture").await
}

/// The text of every `[hearth]` notice the editor received.
fn notices(editor: &Editor) -> Vec<String> {
    editor
        .requests("session/update")
        .iter()
        .filter(|n| n["update"]["sessionUpdate"] == "agent_thought_chunk")
        .filter_map(|n| n["update"]["content"]["text"].as_str().map(str::to_string))
        .filter(|t| t.contains("[hearth]"))
        .collect()
}

/// The content of the last `tool` message in a request body, without the reminder of the task.
fn last_tool_message(body: &Value) -> String {
    let content = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    crate::common::model_requests::without_reminder(&content)
}

/// The last update of the card `id`.
fn last_update(editor: &Editor, id: &str) -> Value {
    editor
        .requests("session/update")
        .into_iter()
        .rev()
        .map(|n| n["update"].clone())
        .find(|u| u["toolCallId"] == id)
        .unwrap()
}

#[tokio::test]
async fn mcp_stdio_tools_are_offered_asked_for_forwarded_and_stopped_on_close() {
    let p = project();
    let server = FakeServer::start().await.unwrap();
    let config = write_config(&p.home, &[("fake", &server.base_url(), "m")]);
    let editor = Editor::default();
    let (root, home, ed) = (p.root.clone(), p.home.clone(), editor.clone());
    editor_client(editor.clone())
        .connect_with(acp_agent(&config, &p.home), async |cx| {
            init(&cx).await;
            let sid = new_session(&cx, &root, vec![fixture(&home, true)]).await;
            let pids = [pid(&home, "fixture.pid"), pid(&home, "child.pid")];
            assert!(pids.iter().all(|p| alive(*p)), "the fixture runs");

            // ask mode: both calls ask; the echo is forwarded, the failure comes back failed.
            server.push(call("e", "fixture__echo", &json!({"text": "hi there"})));
            server.push(call("f", "fixture__fail", &json!({"reason": "nope"})));
            server.push(Reply::text(&["Done."]));
            ed.answer(&["allow_once", "allow_once"]);
            assert_eq!(prompt(&cx, &sid).await, StopReason::EndTurn);
            assert!(notices(&ed).is_empty(), "{:?}", notices(&ed));
            let bodies: Vec<Value> = chat_requests(&server)
                .iter()
                .map(|r| r.body.clone())
                .collect();
            assert_eq!(bodies.len(), 3);
            let last = bodies.last().unwrap();
            let calls = Calls::from_body(last, &["e", "f"]);
            assert_eq!(
                timeline(&ed, &root, &calls),
                lines(
                    "call e read pending
                     ask e
                     update e in_progress
                     update e completed [content]
                     call f other pending
                     ask f
                     update f in_progress
                     update f failed [content]"
                )
            );
            assert_eq!(
                tool_message_by_name(last, "fixture__echo"),
                "echo: hi there"
            );
            assert_eq!(
                tool_message_by_name(last, "fixture__fail"),
                "the fixture failed on purpose: nope"
            );
            assert_eq!(
                last["messages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|m| m["role"] == "tool")
                    .count(),
                2
            );
            // The cards: `server: tool` titles, the result as text.
            let asks = ed.requests("session/request_permission");
            assert_eq!(asks[0]["toolCall"]["title"], "fixture: echo");
            assert_eq!(asks[1]["toolCall"]["title"], "fixture: fail");
            assert_eq!(asks[0]["toolCall"]["rawInput"], json!({"text": "hi there"}));
            let echo = last_update(&ed, calls.id("e"));
            assert_eq!(echo["content"][0]["content"]["text"], "echo: hi there");
            let fail = last_update(&ed, calls.id("f"));
            assert_eq!(
                fail["content"][0]["content"]["text"],
                "the fixture failed on purpose: nope"
            );

            // Offered with the server's schema and description, beside the built-ins.
            let offered = offered_tools(&bodies[0]);
            assert!(offered.contains(&"read_file".to_string()), "{offered:?}");
            assert!(
                offered.contains(&"fixture__echo".to_string()),
                "{offered:?}"
            );
            assert!(
                offered.contains(&"fixture__fail".to_string()),
                "{offered:?}"
            );
            let echo_spec = bodies[0]["tools"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["function"]["name"] == "fixture__echo")
                .unwrap()["function"]
                .clone();
            assert_eq!(
                echo_spec["parameters"]["properties"]["text"]["type"],
                "string"
            );
            assert_eq!(echo_spec["parameters"]["required"], json!(["text"]));
            let description = echo_spec["description"].as_str().unwrap();
            assert!(
                description.starts_with("Repeats the text it is given."),
                "{description}"
            );

            // bypass: no question, the call still goes through.
            set_mode(&cx, &sid, "bypass").await;
            ed.clear();
            server.push(call("b", "fixture__echo", &json!({"text": "again"})));
            server.push(Reply::text(&["Done."]));
            assert_eq!(prompt(&cx, &sid).await, StopReason::EndTurn);
            assert!(ed.requests("session/request_permission").is_empty());
            let last = chat_requests(&server).last().unwrap().body.clone();
            assert_eq!(last_tool_message(&last), "echo: again");

            // plan: MCP tools are not offered, and a call is refused without reaching the server.
            set_mode(&cx, &sid, "plan").await;
            server.push(call("p", "fixture__echo", &json!({"text": "planned"})));
            server.push(Reply::text(&["Done."]));
            assert_eq!(prompt(&cx, &sid).await, StopReason::EndTurn);
            let requests = chat_requests(&server);
            let plan_bodies = &requests[requests.len() - 2..];
            assert!(
                !offered_tools(&plan_bodies[0].body)
                    .iter()
                    .any(|t| t.starts_with("fixture__")),
                "plan mode offers no MCP tool"
            );
            let refused = last_tool_message(&plan_bodies[1].body);
            assert!(
                refused.starts_with("Plan mode: `fixture__echo`"),
                "{refused}"
            );

            // Closing the session stops the server and what it started.
            cx.send_request(CloseSessionRequest::new(sid.clone()))
                .block_task()
                .await
                .unwrap();
            assert!(all_gone(&pids).await, "the fixture outlived its session");
            Ok(())
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn mcp_server_that_cannot_start_is_reported_once_and_the_session_goes_on() {
    let p = project();
    let server = FakeServer::start().await.unwrap();
    let config = write_config(&p.home, &[("fake", &server.base_url(), "m")]);
    let editor = Editor::default();
    let (root, home, ed) = (p.root.clone(), p.home.clone(), editor.clone());
    let missing = home.join("no-such-mcp-server");
    editor_client(editor.clone())
        .connect_with(acp_agent(&config, &p.home), async |cx| {
            init(&cx).await;
            let servers = vec![
                McpServer::Stdio(McpServerStdio::new("ghost", &missing)),
                fixture(&home, false),
            ];
            let sid = new_session(&cx, &root, servers).await;
            server.push(call("e", "fixture__echo", &json!({"text": "still here"})));
            server.push(Reply::text(&["Done."]));
            ed.answer(&["allow_once"]);
            assert_eq!(prompt(&cx, &sid).await, StopReason::EndTurn);
            server.push(Reply::text(&["Again."]));
            assert_eq!(prompt(&cx, &sid).await, StopReason::EndTurn);

            let said = notices(&ed);
            assert_eq!(said.len(), 1, "{said:?}");
            assert!(
                said[0].contains("MCP server `ghost` is not available"),
                "{said:?}"
            );
            assert!(said[0].contains(&missing.display().to_string()), "{said:?}");
            let bodies = chat_requests(&server);
            let offered = offered_tools(&bodies[0].body);
            assert!(
                !offered.iter().any(|t| t.starts_with("ghost")),
                "{offered:?}"
            );
            assert!(
                offered.contains(&"fixture__echo".to_string()),
                "{offered:?}"
            );
            assert_eq!(
                tool_message_by_name(&bodies[1].body, "fixture__echo"),
                "echo: still here"
            );
            Ok(())
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn mcp_servers_stop_when_hearth_exits() {
    let p = project();
    let server = FakeServer::start().await.unwrap();
    let config = write_config(&p.home, &[("fake", &server.base_url(), "m")]);
    let (root, home) = (p.root.clone(), p.home.clone());
    editor_client(Editor::default())
        .connect_with(acp_agent(&config, &p.home), async |cx| {
            init(&cx).await;
            new_session(&cx, &root, vec![fixture(&home, true)]).await;
            Ok(())
        })
        .await
        .unwrap();
    let pids = [pid(&home, "fixture.pid"), pid(&home, "child.pid")];
    assert!(all_gone(&pids).await, "an MCP server outlived hearth");
}

#[tokio::test]
async fn mcp_http_server_on_loopback_gets_the_call_and_the_headers() {
    let p = project();
    let server = FakeServer::start().await.unwrap();
    let config = write_config(&p.home, &[("fake", &server.base_url(), "m")]);
    let (mcp, url) = McpHttp::start().await;
    let editor = Editor::default();
    let (root, ed) = (p.root.clone(), editor.clone());
    editor_client(editor.clone())
        .connect_with(acp_agent(&config, &p.home), async |cx| {
            init(&cx).await;
            let web = McpServerHttp::new("web", url.as_str())
                .headers(vec![HttpHeader::new("X-Token", "secret")]);
            let sid = new_session(&cx, &root, vec![McpServer::Http(web)]).await;
            server.push(call("s", "web__shout", &json!({"text": "quiet please"})));
            server.push(Reply::text(&["Done."]));
            ed.answer(&["allow_once"]);
            assert_eq!(prompt(&cx, &sid).await, StopReason::EndTurn);
            let requests = chat_requests(&server);
            assert!(offered_tools(&requests[0].body).contains(&"web__shout".to_string()));
            assert_eq!(
                tool_message_by_name(&requests[1].body, "web__shout"),
                "QUIET PLEASE"
            );
            assert_eq!(ed.requests("session/request_permission").len(), 1);
            assert!(notices(&ed).is_empty(), "{:?}", notices(&ed));
            Ok(())
        })
        .await
        .unwrap();
    let initialize = &mcp.messages()[0];
    assert_eq!(initialize["method"], "initialize");
    assert_eq!(initialize["params"]["clientInfo"]["name"], "hearth");
    let posts = mcp.posts();
    assert!(
        posts.len() >= 3,
        "initialize, initialized, list, call: {posts:?}"
    );
    for headers in &posts {
        assert!(
            headers.contains(&("x-token".to_string(), "secret".to_string())),
            "{headers:?}"
        );
    }
}

#[tokio::test]
async fn mcp_servers_passed_to_resume_and_load_serve_the_restored_session() {
    let p = project();
    let server = FakeServer::start().await.unwrap();
    let config = write_config(&p.home, &[("fake", &server.base_url(), "m")]);
    let editor = Editor::default();
    let (root, home, ed) = (p.root.clone(), p.home.clone(), editor.clone());
    editor_client(editor.clone())
        .connect_with(acp_agent(&config, &p.home), async |cx| {
            init(&cx).await;
            let sid = new_session(&cx, &root, Vec::new()).await;
            server.push(Reply::text(&["Hello."]));
            assert_eq!(prompt(&cx, &sid).await, StopReason::EndTurn);
            assert!(
                !offered_tools(&chat_requests(&server)[0].body)
                    .iter()
                    .any(|t| t.starts_with("fixture__"))
            );
            let close = || CloseSessionRequest::new(sid.clone());
            cx.send_request(close()).block_task().await.unwrap();

            // Resumed with the fixture: its tools serve the restored session.
            cx.send_request(
                ResumeSessionRequest::new(sid.clone(), root.clone())
                    .mcp_servers(vec![fixture(&home, false)]),
            )
            .block_task()
            .await
            .unwrap();
            set_mode(&cx, &sid, "bypass").await;
            server.push(call("r", "fixture__echo", &json!({"text": "resumed"})));
            server.push(Reply::text(&["Done."]));
            assert_eq!(prompt(&cx, &sid).await, StopReason::EndTurn);
            let last = chat_requests(&server).last().unwrap().body.clone();
            assert_eq!(last_tool_message(&last), "echo: resumed");
            let first_pid = pid(&home, "fixture.pid");
            cx.send_request(close()).block_task().await.unwrap();
            assert!(
                all_gone(&[first_pid]).await,
                "closing stops the resumed session's server"
            );

            // Loaded with the fixture: a fresh server, the same tools.
            cx.send_request(
                LoadSessionRequest::new(sid.clone(), root.clone())
                    .mcp_servers(vec![fixture(&home, false)]),
            )
            .block_task()
            .await
            .unwrap();
            assert_ne!(pid(&home, "fixture.pid"), first_pid);
            server.push(call("l", "fixture__echo", &json!({"text": "loaded"})));
            server.push(Reply::text(&["Done."]));
            assert_eq!(prompt(&cx, &sid).await, StopReason::EndTurn);
            let last = chat_requests(&server).last().unwrap().body.clone();
            assert_eq!(last_tool_message(&last), "echo: loaded");
            assert!(notices(&ed).is_empty(), "{:?}", notices(&ed));
            Ok(())
        })
        .await
        .unwrap();
}

//! Tools over ACP, end to end: the real `hearth` binary driven by a fake editor (the SDK's
//! client, serving fs and terminals or advertising nothing), a fake OpenAI-compatible server
//! scripting the model's tool calls round by round.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agent_client_protocol::Agent;
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, InitializeRequest, LoadSessionRequest, SessionId, StopReason,
};
use hearth_testkit::{DONE, FakeServer, Reply, chunk_finish, chunk_role, chunk_tool_call};
use serde_json::{Value, json};

use crate::common::acp_requests::{new_session, prompt, set_mode};
use crate::common::editor_client::{Editor, capabilities, editor_client};
use crate::common::hearth_bin::{acp_agent, write_config};
use crate::common::model_requests::{chat_requests, offered_tools};
use crate::common::timeline::{Calls, lines, timeline};

const DISK: &str = "pub fn greet() -> &'static str {\n    \"hello\"\n}\n";
/// What the editor's unsaved buffer holds for src/lib.rs: not what is on disk.
const BUFFER: &str = "// unsaved change\npub fn greet() -> &'static str {\n    \"hello\"\n}\n";

/// A project directory with src/lib.rs, and a separate home.
struct Project {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
}

fn project() -> Project {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("project");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/lib.rs"), DISK).unwrap();
    let home = base.join("home");
    std::fs::create_dir_all(&home).unwrap();
    Project {
        _dir: dir,
        root,
        home,
    }
}

/// One native tool call whose arguments arrive in two fragments.
fn call(id: &str, name: &str, args: &Value) -> Reply {
    let text = args.to_string();
    let (a, b) = text.split_at(text.len() / 2);
    Reply::tool_call(id, name, &[a, b])
}

fn read_call(id: &str) -> Reply {
    call(id, "read_file", &json!({"path": "src/lib.rs"}))
}

fn grep_call(id: &str) -> Reply {
    call(id, "grep", &json!({"pattern": "hel+o"}))
}

fn edit_call(id: &str) -> Reply {
    call(
        id,
        "edit_file",
        &json!({"path": "src/lib.rs", "edits": [{"old_text": "\"hello\"", "new_text": "\"hi\""}]}),
    )
}

fn bash_call(id: &str, command: &str) -> Reply {
    call(id, "bash", &json!({"command": command}))
}

/// Keyable for "allow always" (its program is `printf`); the output proves a shell ran it.
const COMMAND: &str = "printf 'ran-%s\\n' 42";

/// The model's rounds for the read → grep → edit → run → finish scenario.
fn push_scenario(server: &FakeServer, extra_bash: bool) {
    server.push(read_call("r"));
    server.push(grep_call("g"));
    server.push(edit_call("e"));
    server.push(bash_call("b", COMMAND));
    if extra_bash {
        server.push(bash_call("b2", "printf again"));
    }
    server.push(Reply::text(&["Do", "ne."]));
}

async fn init(cx: &ConnectionTo<Agent>, full: bool) {
    cx.send_request(
        InitializeRequest::new(ProtocolVersion::V1).client_capabilities(capabilities(full)),
    )
    .block_task()
    .await
    .unwrap();
}

async fn open(cx: &ConnectionTo<Agent>, full: bool, cwd: &Path) -> SessionId {
    init(cx, full).await;
    new_session(cx, cwd).await
}

const READ_AND_GREP: &str = "
    call r read pending
    update r in_progress
    read src/lib.rs
    update r completed [content]
    call g search pending
    update g in_progress
    update g completed [content]
";

/// The command's card and requests once it is allowed to run (`ask` when it asks first).
fn run_command(id: &str, ask: bool) -> String {
    let ask = if ask {
        format!("ask {id}\n")
    } else {
        String::new()
    };
    format!(
        "call {id} execute pending
         {ask}update {id} in_progress
         terminal/create
         update {id} in_progress [terminal]
         terminal/wait_for_exit
         terminal/output
         terminal/release
         update {id} completed [terminal]"
    )
}

/// What one connection's scenarios share.
struct Harness<'a> {
    cx: &'a ConnectionTo<Agent>,
    server: &'a FakeServer,
    editor: &'a Editor,
    root: &'a Path,
}

impl Harness<'_> {
    /// Runs the scenario in `mode` in a fresh session (a second `echo` after the first when
    /// `extra_bash`), checks what the editor saw and what the model was told, and returns the
    /// session's chat request bodies and its calls.
    async fn scenario(
        &self,
        mode: &str,
        answers: &[&'static str],
        extra_bash: bool,
        expected: &str,
    ) -> (Vec<Value>, Calls) {
        let (cx, editor, root) = (self.cx, self.editor, self.root);
        editor.clear();
        editor.answer(answers);
        push_scenario(self.server, extra_bash);
        let before = chat_requests(self.server).len();
        let sid = new_session(cx, root).await;
        set_mode(cx, &sid, mode).await;
        assert_eq!(
            prompt(cx, &sid, "greet with hi").await,
            StopReason::EndTurn,
            "{mode}"
        );
        let bodies: Vec<Value> = chat_requests(self.server)[before..]
            .iter()
            .map(|r| r.body.clone())
            .collect();
        let last = bodies.last().unwrap();
        let labels: &[&str] = if extra_bash {
            &["r", "g", "e", "b", "b2"]
        } else {
            &["r", "g", "e", "b"]
        };
        let calls = Calls::from_body(last, labels);
        assert_eq!(
            timeline(editor, root, &calls),
            lines(expected),
            "mode {mode}"
        );
        // The read went through the editor: the model saw the unsaved buffer.
        let read = calls.tool_message(last, "r");
        assert!(read.contains("// unsaved change"), "{read}");
        assert!(
            read.contains(&root.join("src/lib.rs").display().to_string()),
            "{read}"
        );
        let grep = calls.tool_message(last, "g");
        assert!(
            grep.contains("src/lib.rs") && grep.contains("\"hello\""),
            "{grep}"
        );
        // Whatever the mode, the editor owns the files: nothing on disk changed.
        assert_eq!(
            std::fs::read_to_string(root.join("src/lib.rs")).unwrap(),
            DISK
        );
        (bodies, calls)
    }
}

#[tokio::test]
async fn editor_with_fs_and_terminal_sees_every_card_request_and_question_per_mode() {
    let p = project();
    let server = FakeServer::start().await.unwrap();
    let config = write_config(&p.home, &[("fake", &server.base_url(), "m")]);
    let editor = Editor::default();
    editor.buffer(p.root.join("src/lib.rs"), BUFFER);
    let edited = BUFFER.replace("\"hello\"", "\"hi\"");
    let lib = p.root.join("src/lib.rs").display().to_string();
    let edit_allowed = "
        read src/lib.rs
        call e edit pending [diff]
        update e in_progress
        read src/lib.rs
        write src/lib.rs
        update e completed [diff]";
    let (root, ed) = (p.root.clone(), editor.clone());
    editor_client(editor.clone())
        .connect_with(acp_agent(&config, &p.home), async |cx| {
            init(&cx, true).await;
            let h = Harness {
                cx: &cx,
                server: &server,
                editor: &ed,
                root: &root,
            };

            // ask: the edit asks (allowed once), the command asks (rejected).
            let expected = format!(
                "{READ_AND_GREP}
                 read src/lib.rs
                 call e edit pending [diff]
                 ask e
                 update e in_progress
                 read src/lib.rs
                 write src/lib.rs
                 update e completed [diff]
                 call b execute pending
                 ask b
                 update b failed [content]"
            );
            let answers = ["allow_once", "reject_once"];
            let (bodies, calls) = h.scenario("ask", &answers, false, &expected).await;
            let last = bodies.last().unwrap();
            assert_eq!(
                calls.tool_message(last, "b"),
                "The user rejected this call."
            );
            let edit = calls.tool_message(last, "e");
            assert_eq!(edit, format!("Edited {lib}: 1 replacement from 1 edit."));
            assert!(offered_tools(&bodies[0]).contains(&"bash".to_string()));
            let diff = calls.last_diff(&ed, "e");
            assert_eq!(diff["oldText"], BUFFER);
            assert_eq!(diff["newText"], edited.as_str());
            assert_eq!(diff["path"], lib.as_str());
            // The question shows the diff before it happens, and offers all four answers.
            let asks = ed.requests("session/request_permission");
            assert_eq!(asks[0]["toolCall"]["content"][0]["type"], "diff");
            assert_eq!(
                asks[0]["toolCall"]["content"][0]["newText"],
                edited.as_str()
            );
            let kinds: Vec<&str> = asks[0]["options"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["kind"].as_str().unwrap())
                .collect();
            assert_eq!(
                kinds,
                ["allow_once", "allow_always", "reject_once", "reject_always"]
            );
            assert_eq!(asks[1]["toolCall"]["kind"], "execute");
            let writes = ed.requests("fs/write_text_file");
            assert_eq!(writes.len(), 1);
            assert_eq!(writes[0]["path"], lib.as_str());
            assert_eq!(writes[0]["content"], edited.as_str());
            assert!(ed.requests("terminal/create").is_empty());

            // accept-edits: only the command asks; "allow always" covers the next `printf`.
            let expected = format!(
                "{READ_AND_GREP}{edit_allowed}\n{}\n{}",
                run_command("b", true),
                run_command("b2", false)
            );
            let (bodies, calls) = h
                .scenario("accept-edits", &["allow_always"], true, &expected)
                .await;
            let last = bodies.last().unwrap();
            let ran = calls.tool_message(last, "b");
            assert!(
                ran.contains("exit code: 0") && ran.contains("ran-42"),
                "{ran}"
            );
            assert!(calls.tool_message(last, "b2").contains("again"));
            let creates = ed.requests("terminal/create");
            assert_eq!(creates.len(), 2);
            assert_eq!(creates[0]["command"], "sh");
            assert_eq!(creates[0]["args"], json!(["-c", COMMAND]));
            assert_eq!(creates[0]["cwd"], root.display().to_string());
            for method in [
                "terminal/wait_for_exit",
                "terminal/output",
                "terminal/release",
            ] {
                let seen: Vec<Value> = ed
                    .requests(method)
                    .iter()
                    .map(|r| r["terminalId"].clone())
                    .collect();
                assert_eq!(seen, [json!("term-1"), json!("term-2")], "{method}");
            }
            assert!(
                ed.requests("terminal/kill").is_empty(),
                "finished commands are not killed"
            );

            // bypass: nothing asks.
            let expected = format!("{READ_AND_GREP}{edit_allowed}\n{}", run_command("b", false));
            h.scenario("bypass", &[], false, &expected).await;

            // plan: the edit is refused with a reason; bash is not even offered, and a model
            // that calls it anyway hears why it cannot run.
            let expected = format!(
                "{READ_AND_GREP}
                 read src/lib.rs
                 call e edit pending [diff]
                 update e failed [content]
                 call b execute pending
                 update b failed [content]"
            );
            let (bodies, calls) = h.scenario("plan", &[], false, &expected).await;
            let tools = offered_tools(&bodies[0]);
            assert!(tools.contains(&"read_file".to_string()), "{tools:?}");
            assert!(!tools.contains(&"bash".to_string()), "{tools:?}");
            let last = bodies.last().unwrap();
            let refused = calls.tool_message(last, "e");
            assert!(
                refused.starts_with("Plan mode:") && refused.contains("plan directory"),
                "{refused}"
            );
            let command = calls.tool_message(last, "b");
            assert!(
                command.starts_with("Plan mode: `bash` runs commands"),
                "{command}"
            );
            assert!(ed.requests("fs/write_text_file").is_empty());
            assert!(ed.requests("terminal/create").is_empty());
            Ok(())
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn editor_without_capabilities_gets_local_files_and_commands_and_no_requests() {
    let p = project();
    let server = FakeServer::start().await.unwrap();
    let config = write_config(&p.home, &[("fake", &server.base_url(), "m")]);
    let editor = Editor::default();
    server.push(read_call("r"));
    server.push(grep_call("g"));
    server.push(edit_call("e"));
    server.push(bash_call(
        "b",
        "echo ran-$((40+2)) > ran.txt && cat ran.txt",
    ));
    server.push(Reply::text(&["Done."]));
    let (root, ed) = (p.root.clone(), editor.clone());
    editor_client(editor.clone())
        .connect_with(acp_agent(&config, &p.home), async |cx| {
            let sid = open(&cx, false, &root).await;
            set_mode(&cx, &sid, "bypass").await;
            assert_eq!(prompt(&cx, &sid, "go").await, StopReason::EndTurn);
            let expected = "
                call r read pending
                update r in_progress
                update r completed [content]
                call g search pending
                update g in_progress
                update g completed [content]
                call e edit pending [diff]
                update e in_progress
                update e completed [diff]
                call b execute pending
                update b in_progress
                update b in_progress [content]
                update b completed [content]";
            let bodies = chat_requests(&server);
            let calls = Calls::from_body(&bodies.last().unwrap().body, &["r", "g", "e", "b"]);
            assert_eq!(timeline(&ed, &root, &calls), lines(expected));
            Ok(())
        })
        .await
        .unwrap();
    // Nothing was asked of a client that advertised nothing.
    assert_eq!(editor.methods(), Vec::<&str>::new());
    // The file really changed on disk, and the command really ran here.
    let edited = DISK.replace("\"hello\"", "\"hi\"");
    assert_eq!(
        std::fs::read_to_string(p.root.join("src/lib.rs")).unwrap(),
        edited
    );
    assert_eq!(
        std::fs::read_to_string(p.root.join("ran.txt")).unwrap(),
        "ran-42\n"
    );
    let bodies: Vec<Value> = chat_requests(&server).into_iter().map(|r| r.body).collect();
    let last = bodies.last().unwrap();
    let calls = Calls::from_body(last, &["r", "g", "e", "b"]);
    assert!(calls.tool_message(last, "r").contains("\"hello\""));
    assert!(calls.tool_message(last, "b").contains("ran-42"));
    let diff = calls.last_diff(&editor, "e");
    assert_eq!(diff["oldText"], DISK);
    assert_eq!(diff["newText"], edited.as_str());
    // Without terminals the card shows the command's output as text.
    let shown = editor
        .requests("session/update")
        .into_iter()
        .rev()
        .find(|n| n["update"]["toolCallId"] == calls.id("b"))
        .unwrap();
    assert!(shown.to_string().contains("ran-42"), "{shown}");
}

/// The part of the local fallback that works today (the ignored test above covers reads and
/// edits): writes and commands of a client that advertised nothing happen on this machine.
#[tokio::test]
async fn editor_without_capabilities_gets_local_writes_and_commands() {
    let p = project();
    let server = FakeServer::start().await.unwrap();
    let config = write_config(&p.home, &[("fake", &server.base_url(), "m")]);
    let editor = Editor::default();
    let content = "- say hi\n";
    server.push(call(
        "w",
        "write_file",
        &json!({"path": "notes/todo.txt", "content": content}),
    ));
    server.push(bash_call(
        "b",
        "cat notes/todo.txt && printf 'ran-%s' 42 > ran.txt",
    ));
    server.push(Reply::text(&["Done."]));
    let (root, ed) = (p.root.clone(), editor.clone());
    editor_client(editor.clone())
        .connect_with(acp_agent(&config, &p.home), async |cx| {
            let sid = open(&cx, false, &root).await;
            set_mode(&cx, &sid, "bypass").await;
            assert_eq!(prompt(&cx, &sid, "go").await, StopReason::EndTurn);
            let bodies = chat_requests(&server);
            let calls = Calls::from_body(&bodies.last().unwrap().body, &["w", "b"]);
            let expected = "
                call w edit pending [diff]
                update w in_progress
                update w completed [diff]
                call b execute pending
                update b in_progress
                update b in_progress [content]
                update b completed [content]";
            assert_eq!(timeline(&ed, &root, &calls), lines(expected));
            let last = &bodies.last().unwrap().body;
            let ran = calls.tool_message(last, "b");
            assert!(
                ran.contains("exit code: 0") && ran.contains("- say hi"),
                "{ran}"
            );
            // Without terminals, the card shows the command's output as text.
            let shown = ed
                .requests("session/update")
                .into_iter()
                .rev()
                .find(|n| n["update"]["toolCallId"] == calls.id("b"))
                .unwrap();
            let text = &shown["update"]["content"][0]["content"]["text"];
            assert!(text.as_str().unwrap().contains("- say hi"), "{shown}");
            let diff = calls.last_diff(&ed, "w");
            assert_eq!(diff["oldText"], Value::Null);
            assert_eq!(diff["newText"], content);
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(editor.methods(), Vec::<&str>::new());
    let todo = p.root.join("notes/todo.txt");
    assert_eq!(std::fs::read_to_string(todo).unwrap(), content);
    assert_eq!(
        std::fs::read_to_string(p.root.join("ran.txt")).unwrap(),
        "ran-42"
    );
}

#[tokio::test]
async fn cancel_while_a_command_runs_kills_and_releases_its_terminal() {
    let p = project();
    let server = FakeServer::start().await.unwrap();
    let config = write_config(&p.home, &[("fake", &server.base_url(), "m")]);
    let editor = Editor::default();
    server.push(bash_call("b", "sleep 30"));
    let (root, ed) = (p.root.clone(), editor.clone());
    let mut session = None;
    editor_client(editor.clone())
        .connect_with(acp_agent(&config, &p.home), async |cx| {
            let sid = open(&cx, true, &root).await;
            session = Some(sid.clone());
            set_mode(&cx, &sid, "bypass").await;
            let turn = prompt(&cx, &sid, "sleep");
            let cancel = async {
                assert!(
                    ed.wait_for(|log| log.iter().any(|l| l.method == "terminal/wait_for_exit"))
                        .await,
                    "the command never started"
                );
                cx.send_notification(CancelNotification::new(sid.clone()))
                    .unwrap();
                Instant::now()
            };
            let (stop, cancelled_at) = tokio::join!(turn, cancel);
            assert_eq!(stop, StopReason::Cancelled);
            assert!(
                cancelled_at.elapsed() < Duration::from_secs(3),
                "{:?}",
                cancelled_at.elapsed()
            );
            Ok(())
        })
        .await
        .unwrap();
    let methods = editor.methods();
    assert_eq!(
        methods,
        [
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/kill",
            "terminal/release"
        ],
    );
    for method in ["terminal/kill", "terminal/release"] {
        assert_eq!(editor.requests(method)[0]["terminalId"], "term-1");
    }
    // Nothing is left running: the editor's process exited.
    for _ in 0..300 {
        if editor.all_terminals_exited() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(editor.all_terminals_exited());
    // No further model round after the cancel.
    assert_eq!(chat_requests(&server).len(), 1);
    // The card ends failed and says it was cancelled, live and when the session is reopened:
    // never left running.
    assert_card_ends_cancelled(&editor);
    let replayed = Editor::default();
    let (root, sid) = (p.root.clone(), session.unwrap());
    editor_client(replayed.clone())
        .connect_with(acp_agent(&config, &p.home), async |cx| {
            init(&cx, true).await;
            cx.send_request(LoadSessionRequest::new(sid, root))
                .block_task()
                .await
                .unwrap();
            Ok(())
        })
        .await
        .unwrap();
    assert_card_ends_cancelled(&replayed);
}

/// The last status any card got is `failed`, and its last content says "Cancelled".
fn assert_card_ends_cancelled(editor: &Editor) {
    let cards: Vec<Value> = editor
        .updates()
        .iter()
        .map(|n| serde_json::to_value(&n.update).unwrap())
        .filter(|u| {
            matches!(
                u["sessionUpdate"].as_str(),
                Some("tool_call" | "tool_call_update")
            )
        })
        .collect();
    let status = cards.iter().rev().find_map(|u| u["status"].as_str());
    assert_eq!(status, Some("failed"), "{cards:#?}");
    let content = cards
        .iter()
        .rev()
        .find(|u| !u["content"].is_null())
        .unwrap();
    assert!(
        content["content"].to_string().contains("Cancelled"),
        "{cards:#?}"
    );
}

#[tokio::test]
async fn bad_tool_input_gets_a_precise_error_and_the_turn_goes_on() {
    let p = project();
    let server = FakeServer::start().await.unwrap();
    let config = write_config(&p.home, &[("fake", &server.base_url(), "m")]);
    let editor = Editor::default();
    // One round, three bad calls: wrong argument type, missing file, old text not found.
    let frames = vec![
        chunk_role(),
        chunk_tool_call(0, Some("t"), Some("read_file"), r#"{"path": 5}"#),
        chunk_tool_call(
            1,
            Some("m"),
            Some("read_file"),
            r#"{"path": "missing.txt"}"#,
        ),
        chunk_tool_call(
            2,
            Some("x"),
            Some("edit_file"),
            r#"{"path": "src/lib.rs", "edits": [{"old_text": "goodbye", "new_text": "bye"}]}"#,
        ),
        chunk_finish("tool_calls"),
        DONE.to_string(),
    ];
    server.push(Reply::frames(&frames));
    server.push(Reply::text(&["Sorry, ", "fixed."]));
    let root = p.root.clone();
    editor_client(editor.clone())
        .connect_with(acp_agent(&config, &p.home), async |cx| {
            let sid = open(&cx, true, &root).await;
            set_mode(&cx, &sid, "bypass").await;
            assert_eq!(prompt(&cx, &sid, "try").await, StopReason::EndTurn);
            Ok(())
        })
        .await
        .unwrap();
    let bodies: Vec<Value> = chat_requests(&server).into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), 2);
    let next = &bodies[1];
    let calls = Calls::from_body(next, &["t", "m", "x"]);
    assert_eq!(
        calls.tool_message(next, "t"),
        "Error: argument `path` of `read_file` must be a string, not a number. The call was not \
         executed. Call the tool again with its arguments as one JSON object that matches its schema."
    );
    let missing = p.root.join("missing.txt");
    assert_eq!(
        calls.tool_message(next, "m"),
        format!("file not found: {}", missing.display())
    );
    let lib = p.root.join("src/lib.rs");
    assert_eq!(
        calls.tool_message(next, "x"),
        format!(
            "the edit: old_text was not found in {}; nothing was changed",
            lib.display()
        )
    );
    // Calls refused before they run show one failed card; each card ends failed (the
    // card shape of a call failing while it runs is checked in its own test below).
    let timeline = timeline(&editor, &p.root, &calls);
    let of = |label: &str| -> Vec<String> {
        timeline
            .iter()
            .filter(|l| l.split(' ').nth(1) == Some(label))
            .cloned()
            .collect()
    };
    assert_eq!(of("t"), ["call t other failed [content]"]);
    assert_eq!(of("x"), ["call x other failed [content]"]);
    assert!(of("m").last().unwrap().contains("failed"), "{timeline:#?}");
    assert!(editor.requests("fs/write_text_file").is_empty());
    assert_eq!(std::fs::read_to_string(&lib).unwrap(), DISK);
}

#[tokio::test]
async fn a_call_failing_while_it_runs_ends_its_shown_card_with_an_update() {
    let p = project();
    let server = FakeServer::start().await.unwrap();
    let config = write_config(&p.home, &[("fake", &server.base_url(), "m")]);
    let editor = Editor::default();
    server.push(call("m", "read_file", &json!({"path": "missing.txt"})));
    server.push(Reply::text(&["No such file."]));
    let root = p.root.clone();
    editor_client(editor.clone())
        .connect_with(acp_agent(&config, &p.home), async |cx| {
            let sid = open(&cx, true, &root).await;
            assert_eq!(prompt(&cx, &sid, "read it").await, StopReason::EndTurn);
            Ok(())
        })
        .await
        .unwrap();
    let bodies = chat_requests(&server);
    let calls = Calls::from_body(&bodies.last().unwrap().body, &["m"]);
    let expected = "
        call m read pending
        update m in_progress
        read missing.txt
        update m failed [content]";
    assert_eq!(timeline(&editor, &p.root, &calls), lines(expected));
}

/// An editor that refuses a write says why in the error's `data` (acpx: `details`): the card and
/// the model both get that text, not a bare "Internal error".
#[tokio::test]
async fn a_refused_write_keeps_the_editors_reason_for_the_card_and_the_model() {
    let p = project();
    let server = FakeServer::start().await.unwrap();
    let config = write_config(&p.home, &[("fake", &server.base_url(), "m")]);
    let editor = Editor::default();
    editor.answer(&["allow_once"]);
    editor.refuse_writes(json!({"details": "Permission denied for fs/write_text_file"}));
    server.push(call(
        "w",
        "write_file",
        &json!({"path": "new.txt", "content": "x"}),
    ));
    server.push(Reply::text(&["The editor refused."]));
    let root = p.root.clone();
    editor_client(editor.clone())
        .connect_with(acp_agent(&config, &p.home), async |cx| {
            let sid = open(&cx, true, &root).await;
            assert_eq!(prompt(&cx, &sid, "write it").await, StopReason::EndTurn);
            Ok(())
        })
        .await
        .unwrap();
    let reason = "Permission denied for fs/write_text_file";
    let card = serde_json::to_string(&editor.updates()).unwrap();
    assert!(card.contains(reason), "the card lost the reason: {card}");
    let bodies = chat_requests(&server);
    let to_model = bodies.last().unwrap().body["messages"].to_string();
    assert!(
        to_model.contains(reason),
        "the model lost the reason: {to_model}"
    );
    assert!(!p.root.join("new.txt").exists());
}

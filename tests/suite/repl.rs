//! End to end: the real `hearth repl`, in a pseudo-terminal (driven with expectrl) and with
//! piped stdin, against the fake OpenAI-compatible server on loopback.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use expectrl::process::unix::WaitStatus;
use expectrl::session::OsSession;
use expectrl::{ControlCode, Eof, Expect, Regex};
use hearth_testkit::{FAKE_MODEL, FakeServer, Reply, Step, chunk_content, chunk_role};
use tempfile::TempDir;

const EXPECT_TIMEOUT: Duration = Duration::from_secs(15);

/// A fake server on its own runtime (the tests drive the terminal synchronously), and a
/// directory holding the config, the home, the data dir and the project the REPL runs in.
struct Fixture {
    runtime: tokio::runtime::Runtime,
    server: FakeServer,
    dir: TempDir,
}

impl Fixture {
    fn new() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let server = runtime.block_on(FakeServer::start()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("project")).unwrap();
        let config = format!(
            "[[endpoints]]\nname = \"fake\"\nbase_url = \"{}\"\nmodel = \"{FAKE_MODEL}\"\ncontext_window = 4096\n[endpoints.timeouts]\nconnect_secs = 2\nfirst_token_secs = 10\nidle_secs = 10\n",
            server.base_url()
        );
        std::fs::write(dir.path().join("config.toml"), config).unwrap();
        Self {
            runtime,
            server,
            dir,
        }
    }

    /// The chat requests the fake server got, in order.
    fn chat_requests(&self) -> Vec<hearth_testkit::Recorded> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| r.path == "/v1/chat/completions")
            .collect()
    }

    fn project(&self) -> PathBuf {
        self.dir.path().join("project")
    }

    fn command(&self, args: &[&str]) -> Command {
        let root = self.dir.path();
        let mut command = Command::new(env!("CARGO_BIN_EXE_hearth"));
        command
            .arg("--config")
            .arg(root.join("config.toml"))
            .arg("repl")
            .args(args)
            .current_dir(self.project())
            .env("HOME", root)
            .env("XDG_DATA_HOME", root.join("data"))
            .env_remove("HEARTH_DATA_DIR")
            .env_remove("HEARTH_BASE_URL")
            .env_remove("HEARTH_MODEL")
            .env_remove("HEARTH_LOG_FILE")
            .env_remove("NO_COLOR")
            .env("TERM", "xterm-256color")
            .env("RUST_LOG", "warn");
        command
    }

    /// The REPL in a pseudo-terminal, at its first prompt.
    fn terminal(&self, args: &[&str]) -> OsSession {
        let mut session = OsSession::spawn(self.command(args)).unwrap();
        session.set_expect_timeout(Some(EXPECT_TIMEOUT));
        session.expect("/help for commands").unwrap();
        session
    }

    /// The REPL with `input` piped to stdin; its stdout, after it exits successfully.
    fn piped(&self, input: &str) -> String {
        let mut child = self
            .command(&[])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let output = child.wait_with_output().unwrap();
        let stdout = String::from_utf8(output.stdout).unwrap();
        assert!(
            output.status.success(),
            "exit {:?}\nstdout:\n{stdout}\nstderr:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        stdout
    }
}

fn write_call(id: &str, path: &str, content: &str) -> Reply {
    let args = serde_json::json!({ "path": path, "content": content }).to_string();
    Reply::tool_call(id, "write_file", &[&args])
}

/// Leaves with Ctrl-D and checks the REPL exited cleanly.
fn leave(mut session: OsSession) {
    session.send(ControlCode::EndOfTransmission).unwrap();
    session.expect(Eof).unwrap();
    let status = session.get_process().wait().unwrap();
    assert!(matches!(status, WaitStatus::Exited(_, 0)), "{status:?}");
}

#[test]
fn a_prompt_streams_its_answer_and_goes_into_the_history() {
    let fx = Fixture::new();
    fx.server
        .push(Reply::text(&["Hello ", "from ", "the fake"]));
    let mut term = fx.terminal(&[]);
    term.expect("ask> ").unwrap();
    term.send_line("say hello").unwrap();
    term.expect("Hello from the fake").unwrap();
    term.expect("ask> ").unwrap();
    leave(term);

    let chat = fx.chat_requests();
    assert_eq!(chat.len(), 1);
    assert!(chat[0].raw_body.contains("say hello"));
    let history = fx.dir.path().join("data/hearth/repl_history");
    let history = std::fs::read_to_string(&history).unwrap();
    assert!(history.contains("say hello"), "{history}");
}

#[test]
fn a_write_asks_permission_and_y_runs_it_while_n_refuses_it() {
    let fx = Fixture::new();
    fx.server.push(write_call("call_a", "a.txt", "alpha\n"));
    fx.server.push(Reply::text(&["wrote a"]));
    fx.server.push(write_call("call_b", "b.txt", "beta\n"));
    fx.server.push(Reply::text(&["did not write b"]));
    let mut term = fx.terminal(&[]);

    term.expect("ask> ").unwrap();
    term.send_line("write a").unwrap();
    term.expect(Regex("allow .*Write a\\.txt.*\\+1.*-0"))
        .unwrap();
    term.expect("always [N]o").unwrap();
    term.send_line("y").unwrap();
    term.expect(Regex("✓.*Write a\\.txt")).unwrap();
    term.expect("wrote a").unwrap();
    term.expect("ask> ").unwrap();
    assert_eq!(
        std::fs::read_to_string(fx.project().join("a.txt")).unwrap(),
        "alpha\n"
    );

    term.send_line("write b").unwrap();
    term.expect(Regex("allow .*Write b\\.txt")).unwrap();
    term.send_line("n").unwrap();
    term.expect(Regex("✗.*Write b\\.txt.*rejected")).unwrap();
    term.expect("did not write b").unwrap();
    term.expect("ask> ").unwrap();
    assert!(!fx.project().join("b.txt").exists());

    term.send_line("/diff").unwrap();
    term.expect(Regex("\\+\\+\\+ .*b/b\\.txt")).unwrap();
    // Ctrl-D only once the prompt is back: sent earlier it can be flushed when the line
    // editor switches the terminal to raw mode, and the REPL would wait forever.
    term.expect("ask> ").unwrap();
    leave(term);
}

#[test]
fn ctrl_c_cancels_a_running_turn_and_the_prompt_comes_back() {
    let fx = Fixture::new();
    fx.server.push(Reply::Sse(vec![
        Step::text(&chunk_role()),
        Step::text(&chunk_content("working on it")),
        Step::Hang,
    ]));
    fx.server.push(Reply::text(&["second answer"]));
    let mut term = fx.terminal(&[]);
    term.expect("ask> ").unwrap();
    term.send_line("take forever").unwrap();
    term.expect("working on it").unwrap();
    term.send(ControlCode::EndOfText).unwrap();
    term.expect("cancelled").unwrap();
    term.expect("ask> ").unwrap();
    assert!(
        fx.runtime
            .block_on(fx.server.wait_dropped(1, Duration::from_secs(5))),
        "the cancelled request's stream must be closed"
    );
    term.send_line("are you there").unwrap();
    term.expect("second answer").unwrap();
    term.expect("ask> ").unwrap();
    leave(term);
}

#[test]
fn ctrl_c_during_a_permission_question_cancels_and_the_next_line_reaches_the_prompt() {
    let fx = Fixture::new();
    fx.server.push(write_call("call_d", "d.txt", "delta\n"));
    fx.server.push(Reply::text(&["still here"]));
    let mut term = fx.terminal(&[]);
    term.expect("ask> ").unwrap();
    term.send_line("write d").unwrap();
    term.expect("always [N]o").unwrap();
    term.send(ControlCode::EndOfText).unwrap();
    term.expect("cancelled").unwrap();
    term.expect("ask> ").unwrap();
    // The question's reader must have let go of the terminal: this line goes to the editor.
    term.send_line("next").unwrap();
    term.expect("still here").unwrap();
    term.expect("ask> ").unwrap();
    leave(term);
    assert!(!fx.project().join("d.txt").exists());
}

#[test]
fn ctrl_c_at_the_prompt_clears_the_line() {
    let fx = Fixture::new();
    fx.server.push(Reply::text(&["only once"]));
    let mut term = fx.terminal(&[]);
    term.expect("ask> ").unwrap();
    term.send("half a thought").unwrap();
    term.expect("half a thought").unwrap();
    term.send(ControlCode::EndOfText).unwrap();
    term.expect("ask> ").unwrap();
    term.send_line("whole prompt").unwrap();
    term.expect("only once").unwrap();
    term.expect("ask> ").unwrap();
    leave(term);
    let chat = fx.chat_requests();
    assert_eq!(chat.len(), 1);
    assert!(chat[0].raw_body.contains("whole prompt"));
    assert!(!chat[0].raw_body.contains("half a thought"));
}

#[test]
fn slash_mode_plan_changes_the_prompt_and_the_next_request() {
    let fx = Fixture::new();
    fx.server.set_models(serde_json::json!({
        "object": "list",
        "data": [{"id": FAKE_MODEL, "object": "model"}, {"id": "other-model", "object": "model"}]
    }));
    fx.server.push(Reply::text(&["here is a plan"]));
    let mut term = fx.terminal(&[]);
    term.expect("ask> ").unwrap();
    term.send_line("/mode plan").unwrap();
    term.expect("mode: plan").unwrap();
    term.expect("plan> ").unwrap();
    term.send_line("/model").unwrap();
    term.expect(Regex(format!("\\* {FAKE_MODEL}"))).unwrap();
    term.expect("other-model").unwrap();
    term.send_line("plan the work").unwrap();
    term.expect("here is a plan").unwrap();
    term.expect("plan> ").unwrap();
    leave(term);

    let chat = fx.chat_requests();
    assert_eq!(chat.len(), 1);
    assert!(chat[0].raw_body.contains("You are in plan mode"));
    let tools: Vec<&str> = chat[0].body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert!(!tools.contains(&"bash"), "{tools:?}");
}

#[test]
fn piped_stdin_is_scriptable_and_prints_no_escape_codes() {
    let fx = Fixture::new();
    fx.server.push(Reply::reasoning_then_text(
        &["pondering"],
        &["first answer"],
    ));
    fx.server.push(write_call("call_c", "c.txt", "gamma\n"));
    fx.server.push(Reply::text(&["wrote c"]));
    let out = fx.piped(
        "hello\nwrite c\nmaybe\ny\n/diff\n/context\n/mode plan\n/bogus\n/quit\nnever sent\n",
    );
    assert!(
        !out.contains('\x1b'),
        "escape codes in piped output:\n{out}"
    );
    let expected_in_order = [
        "┊ pondering\n",
        "first answer\n",
        "• Write c.txt  +1 -0\n",
        "? allow Write c.txt (+1 -0)? [y]es / [a]lways / [n]o / always [N]o maybe\n",
        "? allow Write c.txt (+1 -0)? [y]es / [a]lways / [n]o / always [N]o y\n",
        "✓ Write c.txt  +1 -0\n",
        "wrote c\n",
        "--- /dev/null\n+++ b/c.txt\n@@ -0,0 +1 @@\n+gamma\n",
        " of 4096 tokens (",
        "mode: plan",
        "unknown command `/bogus`",
    ];
    let mut rest = out.as_str();
    for piece in expected_in_order {
        let at = rest
            .find(piece)
            .unwrap_or_else(|| panic!("{piece:?} missing (in order) from:\n{out}"));
        rest = &rest[at + piece.len()..];
    }
    assert!(!out.contains("never sent"));
    assert_eq!(
        std::fs::read_to_string(fx.project().join("c.txt")).unwrap(),
        "gamma\n"
    );
    // Nothing was read after /quit: three prompts' worth of requests, no more.
    assert_eq!(fx.chat_requests().len(), 3);
}

#[test]
fn continue_and_resume_bring_back_a_stored_session_with_its_history() {
    let fx = Fixture::new();
    // Nothing stored yet: --continue says so and starts fresh.
    fx.server.push(Reply::text(&["first answer"]));
    let mut command = fx.command(&["--continue"]);
    let out = command.stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("no saved session"), "{stdout}");

    let out = fx.piped("remember the word kumquat\n/quit\n");
    assert!(out.contains("first answer"), "{out}");

    // A later REPL lists it, resumes it, shows its history, and the model sees it again.
    fx.server.push(Reply::text(&["second answer"]));
    let out = fx.piped("/sessions\n/resume\nwhat was the word?\n/resume no-such-id\n/quit\n");
    assert!(
        out.contains("remember the word kumquat"),
        "the replay shows the old prompt: {out}"
    );
    assert!(out.matches("first answer").count() >= 1, "{out}");
    assert!(out.contains("second answer"), "{out}");
    assert!(
        out.contains("no stored session with id no-such-id"),
        "{out}"
    );
    assert!(
        fx.chat_requests()
            .last()
            .unwrap()
            .raw_body
            .contains("kumquat"),
        "the resumed history goes to the model"
    );
}

/// Drives `hearth` (ACP on stdio) by hand for one prompt in the project; returns the session id.
fn acp_session_with_one_prompt(fx: &Fixture, text: &str) -> String {
    use std::io::{BufRead, BufReader, Write};
    let root = fx.dir.path();
    let mut child = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .arg("--config")
        .arg(root.join("config.toml"))
        .env("HOME", root)
        .env("XDG_DATA_HOME", root.join("data"))
        .env_remove("HEARTH_DATA_DIR")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut call = |id: u64, method: &str, params: serde_json::Value| {
        let line =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        loop {
            let mut answer = String::new();
            assert!(
                stdout.read_line(&mut answer).unwrap() > 0,
                "agent closed stdout"
            );
            let value: serde_json::Value = serde_json::from_str(&answer).unwrap();
            if value["id"] == id {
                return value;
            }
        }
    };
    call(1, "initialize", serde_json::json!({"protocolVersion": 1}));
    let opened = call(
        2,
        "session/new",
        serde_json::json!({"cwd": fx.project(), "mcpServers": []}),
    );
    let id = opened["result"]["sessionId"].as_str().unwrap().to_string();
    let answered = call(
        3,
        "session/prompt",
        serde_json::json!({"sessionId": id, "prompt": [{"type": "text", "text": text}]}),
    );
    assert_eq!(answered["result"]["stopReason"], "end_turn", "{answered}");
    drop(stdin);
    child.wait().unwrap();
    id
}

#[test]
fn a_session_started_in_the_editor_resumes_in_the_terminal_with_its_history() {
    let fx = Fixture::new();
    fx.server.push(Reply::text(&["the editor's answer"]));
    let id = acp_session_with_one_prompt(&fx, "asked from the editor about quinces");

    fx.server.push(Reply::text(&["the terminal's answer"]));
    let mut session = fx.terminal(&[]);
    session.send_line(format!("/resume {id}")).unwrap();
    session
        .expect("asked from the editor about quinces")
        .unwrap();
    session.expect("the editor's answer").unwrap();
    session
        .expect(format!("resumed session {id}").as_str())
        .unwrap();
    session.send_line("and in the terminal?").unwrap();
    session.expect("the terminal's answer").unwrap();
    session.expect("ask> ").unwrap();
    leave(session);
    let last = fx.chat_requests().pop().unwrap();
    assert!(
        last.raw_body.contains("quinces"),
        "the editor's history goes to the model"
    );
}

#[test]
fn compact_and_clear_in_the_repl() {
    let fx = Fixture::new();
    fx.server.push(Reply::text(&["noted the plums"]));
    fx.server.push(Reply::text(&["second"]));
    fx.server.push_when(
        "You are writing a handover note",
        Reply::text(&["## Goal\nplums"]),
    );
    fx.server.push(Reply::text(&["after clear"]));
    let out = fx.piped(
        "remember the plums\nand more\n/compact plums\n/context\n/clear\nwhat fruit?\n/quit\n",
    );
    assert!(out.contains("compacted: a "), "{out}");
    assert!(out.contains("A summary stands in for the first"), "{out}");
    assert!(out.contains("context cleared"), "{out}");
    let requests = fx.chat_requests();
    assert_eq!(
        requests.len(),
        4,
        "two prompts, one summary, one after /clear"
    );
    assert!(requests[2].raw_body.contains("focus on: plums"));
    let fresh = &requests[3].raw_body;
    assert!(!fresh.contains("remember the plums") && fresh.contains("what fruit?"));
}

//! Garbage on stdin gets JSON-RPC errors and the process keeps serving.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

/// Sends one line and reads one line back.
fn exchange(stdin: &mut impl Write, stdout: &mut impl BufRead, line: &str) -> Value {
    writeln!(stdin, "{line}").unwrap();
    stdin.flush().unwrap();
    let mut answer = String::new();
    stdout.read_line(&mut answer).unwrap();
    serde_json::from_str(&answer).unwrap_or_else(|e| panic!("not JSON ({e}): {answer:?}"))
}

/// `hearth` serving ACP on pipes, with no configuration and its data under `home`.
fn spawn_agent(home: &std::path::Path) -> (Child, ChildStdin, BufReader<ChildStdout>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env_remove("HEARTH_BASE_URL")
        .env_remove("HEARTH_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    (child, stdin, stdout)
}

#[test]
fn garbage_unknown_methods_and_unknown_sessions_get_errors_and_the_agent_keeps_serving() {
    let home = tempfile::tempdir().unwrap();
    let (mut child, mut stdin, mut stdout) = spawn_agent(home.path());

    let garbage = exchange(&mut stdin, &mut stdout, "this is not json {");
    assert_eq!(garbage["error"]["code"], -32700);

    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}});
    let answer = exchange(&mut stdin, &mut stdout, &init.to_string());
    assert_eq!(answer["result"]["protocolVersion"], 1);

    let unknown = json!({"jsonrpc": "2.0", "id": 2, "method": "bogus/method", "params": {}});
    assert_eq!(
        exchange(&mut stdin, &mut stdout, &unknown.to_string())["error"]["code"],
        -32601
    );

    let set_model = json!({"jsonrpc": "2.0", "id": 3, "method": "session/set_model", "params": {"sessionId": "x", "modelId": "y"}});
    assert_eq!(
        exchange(&mut stdin, &mut stdout, &set_model.to_string())["error"]["code"],
        -32601
    );

    let ghost = json!({"jsonrpc": "2.0", "id": 4, "method": "session/prompt",
        "params": {"sessionId": "no-such-session", "prompt": [{"type": "text", "text": "hi"}]}});
    let answer = exchange(&mut stdin, &mut stdout, &ghost.to_string());
    assert_eq!(answer["error"]["code"], -32002);
    assert_eq!(answer["error"]["data"]["sessionId"], "no-such-session");

    let bad_params =
        json!({"jsonrpc": "2.0", "id": 5, "method": "session/new", "params": {"cwd": 42}});
    assert_eq!(
        exchange(&mut stdin, &mut stdout, &bad_params.to_string())["error"]["code"],
        -32602
    );

    let truncated = r#"{"jsonrpc":"2.0","id":6,"method":"session/new","params":{"cwd":"/tmp""#;
    assert_eq!(
        exchange(&mut stdin, &mut stdout, truncated)["error"]["code"],
        -32700
    );

    // Still serving: a real request works after all of that.
    let new = json!({"jsonrpc": "2.0", "id": 7, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}});
    let answer = exchange(&mut stdin, &mut stdout, &new.to_string());
    assert!(answer["result"]["sessionId"].is_string(), "{answer}");

    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "clean exit at EOF, got {status}");
}

/// A line that is not UTF-8 costs that line, not the server; a line longer than hearth reads is
/// dropped as it arrives and answered briefly, without echoing it back.
#[test]
fn bad_bytes_and_endless_lines_cost_one_line_each() {
    let home = tempfile::tempdir().unwrap();
    let (mut child, mut stdin, mut stdout) = spawn_agent(home.path());
    let mut read = |stdin: &mut ChildStdin, bytes: &[u8]| -> String {
        stdin.write_all(bytes).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
        let mut answer = String::new();
        stdout.read_line(&mut answer).unwrap();
        answer
    };

    let bad = read(
        &mut stdin,
        b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"\xff\xfe\"}",
    );
    let bad: Value = serde_json::from_str(&bad).unwrap_or_else(|e| panic!("{e}: {bad:?}"));
    assert!(bad["error"]["code"].is_i64(), "{bad}");

    let endless = vec![b'x'; 20 * 1024 * 1024];
    let answer = read(&mut stdin, &endless);
    assert!(
        answer.len() < 4096,
        "the answer echoes {} bytes",
        answer.len()
    );
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["error"]["code"], -32700, "{answer}");

    let init = json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}});
    let answer = read(&mut stdin, init.to_string().as_bytes());
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["result"]["protocolVersion"], 1, "{answer}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

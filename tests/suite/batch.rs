//! `hearth run` end to end: the real binary against the fake OpenAI-compatible server, its
//! outputs compared with golden files (tests/golden/batch/), its exit codes, `--jobs`, and
//! headless permission denials.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use hearth_testkit::{FakeServer, Reply, Step, chunk_content, chunk_finish, chunk_role};
use serde_json::{Value, json};

use crate::common::golden::assert_golden;
use crate::common::hearth_bin::{dead_url, hearth_bin, write_config};
use crate::common::model_requests::{chat_requests, tool_message_by_name};

/// A working directory with notes.txt, a home, and a config for `endpoints` (`fake` first).
struct Workspace {
    _dir: tempfile::TempDir,
    cwd: PathBuf,
    home: PathBuf,
    config: PathBuf,
}

fn workspace(server: &FakeServer) -> Workspace {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let cwd = base.join("work");
    let home = base.join("home");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(cwd.join("notes.txt"), "buy milk\ncall mum\n").unwrap();
    let config = write_config(
        &home,
        &[
            ("fake", &server.base_url(), "m"),
            ("dead", &dead_url(), "ghost"),
        ],
    );
    Workspace {
        _dir: dir,
        cwd,
        home,
        config,
    }
}

struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `hearth run ARGS` in the workspace (on a blocking thread: the fake server needs the
/// runtime meanwhile).
async fn hearth_run(ws: &Workspace, args: &[&str]) -> Output {
    let mut command = Command::new(hearth_bin());
    command
        .arg("--config")
        .arg(&ws.config)
        .arg("run")
        .args(args)
        .current_dir(&ws.cwd)
        .env("HOME", &ws.home)
        .env("XDG_DATA_HOME", ws.home.join("data"))
        .env("RUST_LOG", "warn")
        .env_remove("HEARTH_CONFIG")
        .env_remove("HEARTH_BASE_URL");
    let out = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// Volatile parts made stable: the workspace path, session ids, hearth's tool-call ids.
fn normalise(text: &str, ws: &Workspace) -> String {
    let text = text.replace(&ws.cwd.display().to_string(), "<CWD>");
    let call_ids = regex::Regex::new("call_[0-9a-f]{32}").unwrap();
    let text = call_ids.replace_all(&text, "<CALL_ID>");
    text.lines()
        .map(|line| match serde_json::from_str::<Value>(line) {
            Ok(mut value) => {
                if value.get("session_id").is_some() {
                    value["session_id"] = json!("<SESSION>");
                }
                value.to_string()
            }
            Err(_) => line.to_string(),
        })
        .map(|l| l + "\n")
        .collect()
}

fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// The golden scenario: the model reads notes.txt, then answers in three chunks.
fn push_read_then_answer(server: &FakeServer) {
    server.push(Reply::tool_call(
        "call_1",
        "read_file",
        &[r#"{"path": "#, r#""notes.txt"}"#],
    ));
    server.push(Reply::text(&["The notes say: ", "buy milk, ", "call mum."]));
}

async fn golden_run(format: &str) -> (Output, Workspace, FakeServer) {
    let server = FakeServer::start().await.unwrap();
    let ws = workspace(&server);
    push_read_then_answer(&server);
    let out = hearth_run(&ws, &["-p", "what do my notes say?", "--output", format]).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let bodies = chat_requests(&server);
    assert_eq!(bodies.len(), 2);
    assert!(tool_message_by_name(&bodies[1].body, "read_file").contains("buy milk"));
    (out, ws, server)
}

#[tokio::test]
async fn text_output_matches_golden() {
    let (out, ws, _server) = golden_run("text").await;
    assert_golden("batch/text.stdout", &normalise(&out.stdout, &ws));
    assert_golden("batch/text.stderr", &normalise(&out.stderr, &ws));
}

#[tokio::test]
async fn json_output_matches_golden() {
    let (out, ws, _server) = golden_run("json").await;
    let lines = json_lines(&out.stdout);
    assert_eq!(lines.len(), 1);
    assert!(!lines[0]["session_id"].as_str().unwrap().is_empty());
    assert_golden("batch/json.stdout", &normalise(&out.stdout, &ws));
}

#[tokio::test]
async fn stream_json_output_matches_golden() {
    let (out, ws, _server) = golden_run("stream-json").await;
    let lines = json_lines(&out.stdout);
    assert_eq!(lines.last().unwrap()["type"], "result");
    assert_golden("batch/stream-json.stdout", &normalise(&out.stdout, &ws));
}

fn write_batch(ws: &Workspace, lines: &[&str]) -> String {
    let path = ws.home.join("batch.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path.display().to_string()
}

#[tokio::test]
async fn mixed_batch_reports_every_prompt_and_the_right_exit_code() {
    let server = FakeServer::start().await.unwrap();
    let ws = workspace(&server);
    server.push(Reply::text(&["first ", "answer"]));
    server.push(Reply::text(&["second ", "answer"]));
    let batch = write_batch(
        &ws,
        &[
            r#"{"id": "ok", "prompt": "one"}"#,
            r#"{"id": "broken", "prompt": "#,
            r#"{"id": "down", "prompt": "two", "model": "dead:ghost"}"#,
            r#"{"id": "ok2", "prompt": "three"}"#,
        ],
    );
    let out = hearth_run(&ws, &["--batch", &batch, "--output", "json"]).await;
    let results = json_lines(&out.stdout);
    let by_id = |id: &str| {
        results
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("no result for {id}: {}", out.stdout))
            .clone()
    };
    assert_eq!(results.len(), 4, "{}", out.stdout);
    assert_eq!(by_id("ok")["text"], "first answer");
    assert_eq!(by_id("ok")["stop_reason"], "end_turn");
    assert_eq!(by_id("ok2")["text"], "second answer");
    let bad = by_id("line 2");
    assert!(
        bad["error"]
            .as_str()
            .unwrap()
            .starts_with("bad batch line:"),
        "{bad}"
    );
    let down = by_id("down");
    let error = down["error"].as_str().unwrap();
    assert!(
        error.contains("dead") && error.contains("refused"),
        "{error}"
    );
    assert!(down.get("stop_reason").is_none());
    // A usage error and an unreachable backend: mixed failures are "a prompt failed".
    assert_eq!(out.code, 1, "stderr: {}", out.stderr);

    // When every failure is an unreachable backend, the code says so.
    server.push(Reply::text(&["fine"]));
    let batch = write_batch(
        &ws,
        &[
            r#"{"id": "ok", "prompt": "one"}"#,
            r#"{"id": "down", "prompt": "two", "model": "dead:ghost"}"#,
        ],
    );
    let out = hearth_run(&ws, &["--batch", &batch, "--output", "json"]).await;
    assert_eq!(json_lines(&out.stdout).len(), 2);
    assert_eq!(out.code, 4, "stderr: {}", out.stderr);
}

/// A reply in many small chunks with pauses, so concurrent prompts overlap in time; `stall`
/// holds it back half-way.
fn slow_reply(n: usize, stall: Duration) -> (Reply, String) {
    let parts: Vec<String> = (0..8).map(|i| format!("reply{n}-part{i} ")).collect();
    let mut steps = vec![Step::text(&chunk_role())];
    for (i, part) in parts.iter().enumerate() {
        steps.push(Step::text(&chunk_content(part)));
        steps.push(Step::Pause(Duration::from_millis(10)));
        if i == 3 {
            steps.push(Step::Pause(stall));
        }
    }
    steps.push(Step::text(&chunk_finish("stop")));
    steps.push(Step::text(hearth_testkit::DONE));
    (Reply::Sse(steps), parts.concat())
}

async fn four_jobs(format: &str) -> (Vec<Value>, BTreeSet<String>) {
    let server = FakeServer::start().await.unwrap();
    let ws = workspace(&server);
    let mut expected = BTreeSet::new();
    for n in 0..4 {
        // The first request to arrive gets a reply that stalls: with four jobs at once, the
        // other three finish meanwhile and its result comes last (one at a time, it would
        // come first).
        let stall = Duration::from_millis(if n == 0 { 600 } else { 0 });
        let (reply, text) = slow_reply(n, stall);
        server.push(reply);
        expected.insert(text);
    }
    let lines: Vec<String> = (0..4)
        .map(|n| format!(r#"{{"id": "p{n}", "prompt": "prompt {n}"}}"#))
        .collect();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let batch = write_batch(&ws, &refs);
    let out = hearth_run(&ws, &["--batch", &batch, "--jobs", "4", "--output", format]).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(chat_requests(&server).len(), 4);
    (json_lines(&out.stdout), expected)
}

#[tokio::test]
async fn four_jobs_keep_each_json_result_whole() {
    let (results, expected) = four_jobs("json").await;
    assert_eq!(results.len(), 4);
    let ids: BTreeSet<&str> = results.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, BTreeSet::from(["p0", "p1", "p2", "p3"]));
    // Which prompt got which reply depends on arrival order; each text must be one whole reply.
    let texts: BTreeSet<String> = results
        .iter()
        .map(|r| r["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(texts, expected);
    assert!(
        results[3]["text"].as_str().unwrap().starts_with("reply0-"),
        "the prompts did not run at once: {results:#?}"
    );
}

#[tokio::test]
async fn four_jobs_stream_json_lines_stay_whole_and_per_prompt() {
    let (lines, expected) = four_jobs("stream-json").await;
    let mut texts = BTreeSet::new();
    for n in 0..4 {
        let id = format!("p{n}");
        let streamed: String = lines
            .iter()
            .filter(|l| l["id"] == id.as_str() && l["event"]["type"] == "agent_text")
            .map(|l| l["event"]["text"].as_str().unwrap())
            .collect();
        let result = lines
            .iter()
            .find(|l| l["id"] == id.as_str() && l["type"] == "result")
            .unwrap();
        assert_eq!(result["text"], streamed.as_str(), "{id}");
        texts.insert(streamed);
    }
    assert_eq!(texts, expected);
}

fn push_write(server: &FakeServer) {
    server.push(Reply::tool_call(
        "w1",
        "write_file",
        &[r#"{"path": "out.txt", "#, r#""content": "data\n"}"#],
    ));
    server.push(Reply::text(&["ok"]));
}

#[tokio::test]
async fn headless_ask_mode_denies_writes_and_tells_the_model() {
    let server = FakeServer::start().await.unwrap();
    let ws = workspace(&server);
    push_write(&server);
    let out = hearth_run(&ws, &["-p", "write it", "--output", "json"]).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let result = &json_lines(&out.stdout)[0];
    let denied = result["denied"].as_array().unwrap();
    assert_eq!(denied.len(), 1, "{result}");
    let denial = denied[0].as_str().unwrap();
    assert!(
        denial.contains("out.txt") && denial.contains("--allow-writes"),
        "{denial}"
    );
    assert_eq!(result["tool_calls"][0]["status"], "failed");
    let requests = chat_requests(&server);
    assert_eq!(requests.len(), 2);
    assert_eq!(
        tool_message_by_name(&requests[1].body, "write_file"),
        "The user rejected this call."
    );
    assert!(!ws.cwd.join("out.txt").exists());

    push_write(&server);
    let out = hearth_run(
        &ws,
        &["-p", "write it", "--output", "json", "--allow-writes"],
    )
    .await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let result = &json_lines(&out.stdout)[0];
    assert_eq!(result["denied"], json!([]));
    assert_eq!(result["tool_calls"][0]["status"], "completed");
    assert_eq!(
        std::fs::read_to_string(ws.cwd.join("out.txt")).unwrap(),
        "data\n"
    );
}

#[tokio::test]
async fn headless_ask_mode_denies_commands_unless_allowed() {
    let server = FakeServer::start().await.unwrap();
    let ws = workspace(&server);
    let push_bash = || {
        server.push(Reply::tool_call(
            "b1",
            "bash",
            &[r#"{"command": "touch ran.txt"}"#],
        ));
        server.push(Reply::text(&["ok"]));
    };
    push_bash();
    let out = hearth_run(&ws, &["-p", "run it", "--output", "json", "--allow-writes"]).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let result = &json_lines(&out.stdout)[0];
    let denial = result["denied"][0].as_str().unwrap();
    assert!(denial.contains("--allow-commands"), "{denial}");
    assert_eq!(
        tool_message_by_name(&chat_requests(&server)[1].body, "bash"),
        "The user rejected this call."
    );
    assert!(!ws.cwd.join("ran.txt").exists());

    push_bash();
    let out = hearth_run(
        &ws,
        &["-p", "run it", "--output", "json", "--allow-commands"],
    )
    .await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(json_lines(&out.stdout)[0]["denied"], json!([]));
    assert!(ws.cwd.join("ran.txt").exists());
}

#[tokio::test]
async fn batch_text_output_heads_each_prompt_and_matches_golden() {
    let server = FakeServer::start().await.unwrap();
    let ws = workspace(&server);
    server.push(Reply::text(&["first ", "answer"]));
    server.push(Reply::text(&["second ", "answer"]));
    let batch = write_batch(
        &ws,
        &[
            r#"{"id": "a", "prompt": "one"}"#,
            r#"{"id": "b", "prompt": "two"}"#,
        ],
    );
    let out = hearth_run(&ws, &["--batch", &batch]).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_golden("batch/batch-text.stdout", &normalise(&out.stdout, &ws));
}

#[tokio::test]
async fn json_result_reports_usage_against_the_context_window() {
    let server = FakeServer::start().await.unwrap();
    let ws = workspace(&server);
    let config = format!(
        "[[endpoints]]\nname = \"fake\"\nbase_url = \"{}\"\nmodel = \"m\"\ncontext_window = 8192\n",
        server.base_url()
    );
    std::fs::write(&ws.config, config).unwrap();
    // Reply::text reports 10 prompt tokens and one completion token per part.
    server.push(Reply::text(&["a", "b"]));
    let out = hearth_run(&ws, &["-p", "hi", "--output", "json"]).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let result = &json_lines(&out.stdout)[0];
    assert_eq!(result["usage"], json!({"used": 12, "size": 8192}));
}

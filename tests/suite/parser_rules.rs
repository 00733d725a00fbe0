//! Parser rules that need the whole round: what the server says decides where an answer
//! starts, and how much of `max_tokens` was used decides whether a call was cut.

use std::path::Path;
use std::process::Command;

use hearth_testkit::{
    DONE, FakeServer, Reply, Step, chunk_content, chunk_finish, chunk_role, chunk_usage,
};
use serde_json::{Value, json};

use crate::common::hearth_bin::{hearth_bin, write_config};
use crate::common::model_requests::chat_requests;

/// A streamed answer: `text`, then `finish` and `completion` tokens of usage.
fn answer(text: &str, finish: &str, completion: u32) -> Reply {
    let frames = [
        chunk_role(),
        chunk_content(text),
        chunk_finish(finish),
        chunk_usage(10, completion),
        DONE.to_string(),
    ];
    Reply::Sse(
        frames
            .iter()
            .map(|f| Step::Bytes(f.clone().into_bytes()))
            .collect(),
    )
}

/// `hearth run --output json` with `extra` appended to the endpoint's config; the result.
async fn run(server: &FakeServer, dir: &Path, extra: &str, args: &[&str]) -> Value {
    let home = dir.join("home");
    let cwd = dir.join("work");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    let config = write_config(&home, &[("fake", &server.base_url(), "local-model")]);
    let mut text = std::fs::read_to_string(&config).unwrap();
    text = text.replacen(
        "context_window = 32768\n",
        &format!("context_window = 32768\n{extra}"),
        1,
    );
    std::fs::write(&config, text).unwrap();
    let mut command = Command::new(hearth_bin());
    command
        .arg("--config")
        .arg(&config)
        .args(["run", "--output", "json"])
        .args(args)
        .current_dir(&cwd)
        .env("HOME", &home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("RUST_LOG", "warn");
    let out = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    serde_json::from_str(stdout.lines().next().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {stdout} / {}", String::from_utf8_lossy(&out.stderr)))
}

#[tokio::test]
async fn a_template_that_opens_think_routes_the_answer_before_a_bare_close_to_reasoning() {
    let server = FakeServer::start().await.unwrap();
    // llama.cpp's /props: a QwQ-style template, its generation prompt ending in `<think>`.
    server.set_json(
        "GET",
        "/props",
        json!({"n_ctx": 32768, "chat_template":
            "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n<think>\\n' }}{%- endif %}"}),
    );
    server.push(answer(
        "The user greets me; I greet back.\n</think>\n\nHello!",
        "stop",
        12,
    ));
    let dir = tempfile::tempdir().unwrap();
    let result = run(&server, dir.path(), "", &["-p", "hi"]).await;
    assert_eq!(result["text"], "Hello!", "{result}");
}

#[tokio::test]
async fn a_call_cut_at_max_tokens_is_never_run_whatever_the_finish_reason() {
    let server = FakeServer::start().await.unwrap();
    // vLLM says `tool_calls` for a call cut by max_tokens; usage shows the limit was used up.
    server.push(answer(
        "<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"cut.txt\", \"content\": \"partial\"}}",
        "tool_calls",
        64,
    ));
    server.push(Reply::text(&["I will write it in parts."]));
    let dir = tempfile::tempdir().unwrap();
    let result = run(
        &server,
        dir.path(),
        "max_tokens = 64\n",
        &["-p", "write it", "--allow-writes"],
    )
    .await;
    assert!(!dir.path().join("work/cut.txt").exists(), "{result}");
    let requests = chat_requests(&server);
    assert_eq!(requests[0].body["max_tokens"], 64);
    assert_eq!(requests.len(), 2, "{result}");
    let told = requests[1].body.to_string();
    assert!(told.contains("cut off by the output token limit"), "{told}");
    assert_eq!(result["text"], "I will write it in parts.");
}

#[tokio::test]
async fn a_native_call_cut_at_max_tokens_is_not_repaired_into_a_run() {
    let server = FakeServer::start().await.unwrap();
    // Two argument fragments, two completion tokens: the limit, and the closing brace missing.
    server.push(Reply::tool_call(
        "n1",
        "write_file",
        &[r#"{"path": "cut.txt", "#, r#""content": "partial""#],
    ));
    server.push(Reply::text(&["Cut."]));
    let dir = tempfile::tempdir().unwrap();
    let result = run(
        &server,
        dir.path(),
        "max_tokens = 2\n",
        &["-p", "write it", "--allow-writes"],
    )
    .await;
    assert!(!dir.path().join("work/cut.txt").exists(), "{result}");
    let requests = chat_requests(&server);
    assert_eq!(requests[0].body["max_tokens"], 2);
    let told = requests[1].body.to_string();
    assert!(told.contains("cut off by the output token limit"), "{told}");
}

//! Context that always fits, end to end: the real binary over ACP against a fake server with
//! a small window. Requests stay within it however large the tool outputs, summaries are made
//! automatically and on `/compact` (and survive a restart), a failing summary degrades to
//! elision, an overflow the server reports is retried once, and the slash commands work.

use std::path::{Path, PathBuf};

use agent_client_protocol::Agent;
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeRequest, LoadSessionRequest, NewSessionRequest, PromptRequest,
    SessionId, SessionUpdate, StopReason,
};
use hearth_testkit::{DONE, FakeServer, Reply, chunk_content, chunk_finish, chunk_role};
use hearth_testkit::{chunk_tool_call, chunk_usage};
use serde_json::{Value, json};

use crate::common::acp_client::{Recorder, recording_client};
use crate::common::acp_requests::prompt;
use crate::common::hearth_bin::acp_agent;
use crate::common::model_requests::chat_requests;

const WINDOW: u64 = 8192;
/// The compaction prompt's first words: how the fake server tells a summary request apart.
const SUMMARY_REQUEST: &str = "You are writing a handover note";
/// How the summary shows up in later requests.
const SUMMARY_MARK: &str = "[Summary of the earlier conversation";

struct Setup {
    _dir: tempfile::TempDir,
    root: PathBuf,
    config: PathBuf,
}

/// A project with a large file, and a config whose one endpoint has an 8k window.
fn setup(server: &FakeServer) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let big: String = (0..600)
        .map(|i| format!("line {i:04}: the quick brown fox jumps over the lazy dog\n"))
        .collect();
    std::fs::write(root.join("big.txt"), big).unwrap();
    let config = root.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[[endpoints]]\nname = \"fake\"\nbase_url = \"{}\"\nmodel = \"m\"\ntool_format = \"native\"\n\
             context_window = {WINDOW}\nmax_tokens = 1024\n\
             [endpoints.timeouts]\nconnect_secs = 2\nfirst_token_secs = 5\nidle_secs = 5\n",
            server.base_url()
        ),
    )
    .unwrap();
    Setup {
        _dir: dir,
        root,
        config,
    }
}

/// A native tool call with no usage chunk, so usage comes from hearth's own count.
/// A read of big.txt from line `n + 1`: each read differs, so none is a repeat the loop guard
/// would refuse to run again.
fn read_big(id: &str, n: usize) -> Reply {
    Reply::frames(&[
        chunk_role(),
        chunk_tool_call(
            0,
            Some(id),
            Some("read_file"),
            &json!({"path": "big.txt", "offset": n + 1}).to_string(),
        ),
        chunk_finish("tool_calls"),
        DONE.to_string(),
    ])
}

fn answer(text: &str) -> Reply {
    Reply::frames(&[
        chunk_role(),
        chunk_content(text),
        chunk_finish("stop"),
        DONE.to_string(),
    ])
}

/// A summary answer with a realistic usage chunk.
fn summary(text: &str) -> Reply {
    Reply::frames(&[
        chunk_role(),
        chunk_content(text),
        chunk_finish("stop"),
        chunk_usage(3000, 40),
        DONE.to_string(),
    ])
}

/// Characters of message content in a request body.
fn content_chars(body: &Value) -> usize {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().map_or(0, str::len))
        .sum()
}

fn is_summary_request(body: &Value) -> bool {
    body.to_string().contains(SUMMARY_REQUEST)
}

fn usage_updates(recorder: &Recorder) -> Vec<(u64, u64)> {
    recorder
        .all()
        .iter()
        .filter_map(|n| match &n.update {
            SessionUpdate::UsageUpdate(u) => Some((u.used, u.size)),
            _ => None,
        })
        .collect()
}

/// Opens a session over ACP, sends `text` as its one prompt (which must end the turn) and
/// returns what the client received.
async fn one_prompt(s: &Setup, text: &str) -> Recorder {
    let recorder = Recorder::default();
    let watch = recorder.clone();
    recording_client(recorder)
        .connect_with(acp_agent(&s.config, &s.root), async |cx| {
            let sid = open(&cx, &s.root).await;
            assert_eq!(prompt(&cx, &sid, text).await, StopReason::EndTurn);
            Ok(())
        })
        .await
        .unwrap();
    watch
}

async fn open(cx: &ConnectionTo<Agent>, cwd: &Path) -> SessionId {
    cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
        .block_task()
        .await
        .unwrap();
    cx.send_request(NewSessionRequest::new(cwd.to_path_buf()))
        .block_task()
        .await
        .unwrap()
        .session_id
}

/// Five reads of a ~9k-token file in an 8k window: every request fits (by hearth's count, and
/// far below the raw history's size), a usage update follows every round, and compaction runs
/// once the elided part is worth summarising.
#[tokio::test]
async fn a_tool_heavy_turn_fits_the_window_compacts_and_reports_usage() {
    let server = FakeServer::start().await.unwrap();
    let s = setup(&server);
    for i in 0..5 {
        server.push(read_big(&format!("c{i}"), i));
    }
    server.push(answer("All five reads done."));
    for _ in 0..3 {
        server.push_when(
            SUMMARY_REQUEST,
            summary("## Goal\nRead big.txt five times."),
        );
    }
    let watch = one_prompt(&s, "read big.txt five times").await;

    let requests = chat_requests(&server);
    let (summaries, turns): (Vec<_>, Vec<_>) =
        requests.iter().partition(|r| is_summary_request(&r.body));
    assert_eq!(turns.len(), 6, "five reads and the answer");
    // Each output alone fills the window, so a summary frees no room: one is made, and the
    // turn does not ask for another every round.
    assert_eq!(
        summaries.len(),
        1,
        "compaction ran {} times",
        summaries.len()
    );
    let raw_file = std::fs::metadata(s.root.join("big.txt")).unwrap().len() as usize;
    for request in &turns {
        // The estimate counts at most four characters per token.
        let chars = content_chars(&request.body);
        assert!(chars <= 4 * WINDOW as usize, "{chars} characters sent");
        assert_eq!(request.body["max_tokens"], 1024);
    }
    let last = &turns.last().unwrap().body;
    assert!(last.to_string().contains(SUMMARY_MARK), "{last:#}");
    assert!(
        content_chars(last) < 2 * raw_file,
        "five file copies were not elided"
    );
    let usage = usage_updates(&watch);
    assert!(usage.len() >= 6, "{usage:?}");
    assert!(
        usage
            .iter()
            .all(|(used, size)| *size == WINDOW && *used <= WINDOW),
        "{usage:?}"
    );
    assert!(
        watch.thought_text().contains("compacted:"),
        "{}",
        watch.thought_text()
    );
}

/// A summary request that fails: the turn goes on with elision alone, says so once, and does
/// not ask for another summary in the same turn.
#[tokio::test]
async fn a_failing_summary_degrades_to_elision_with_a_message() {
    let server = FakeServer::start().await.unwrap();
    let s = setup(&server);
    for i in 0..5 {
        server.push(read_big(&format!("c{i}"), i));
    }
    server.push(answer("Done anyway."));
    for _ in 0..3 {
        server.push_when(SUMMARY_REQUEST, Reply::error(500, "summariser crashed"));
    }
    let watch = one_prompt(&s, "read it five times").await;
    let requests = chat_requests(&server);
    let summaries = requests
        .iter()
        .filter(|r| is_summary_request(&r.body))
        .count();
    assert_eq!(summaries, 1, "one attempt per turn");
    let thoughts = watch.thought_text();
    assert_eq!(
        thoughts.matches("compaction failed").count(),
        1,
        "{thoughts}"
    );
    assert!(thoughts.contains("summariser crashed"), "{thoughts}");
    assert!(watch.agent_text().contains("Done anyway."));
    for request in requests.iter().filter(|r| !is_summary_request(&r.body)) {
        assert!(content_chars(&request.body) <= 4 * WINDOW as usize);
        assert!(!request.body.to_string().contains(SUMMARY_MARK));
    }
}

/// `/compact focus` summarises on demand with the focus in the request; the summary stands in
/// for the early rounds in the next request, and still does after a restart and
/// `session/load`. The commands are advertised once the session is open.
#[tokio::test]
async fn compact_on_demand_survives_a_restart() {
    let server = FakeServer::start().await.unwrap();
    let s = setup(&server);
    server.push(answer("Hello there."));
    server.push(answer("Sure, noted."));
    server.push_when(
        SUMMARY_REQUEST,
        summary("## Goal\nGreet, then note things."),
    );
    server.push(answer("Carrying on."));
    server.push(answer("Still carrying on."));
    let recorder = Recorder::default();
    let watch = recorder.clone();
    let sid = recording_client(recorder)
        .connect_with(acp_agent(&s.config, &s.root), async |cx| {
            let sid = open(&cx, &s.root).await;
            assert!(
                watch
                    .wait_for(|r| r.all().iter().any(|n| matches!(
                        &n.update,
                        SessionUpdate::AvailableCommandsUpdate(u)
                            if ["compact", "clear", "mode", "model", "context", "help"]
                                .iter()
                                .all(|c| u.available_commands.iter().any(|a| a.name == *c))
                    )))
                    .await,
                "no available_commands_update"
            );
            prompt(&cx, &sid, "hi").await;
            prompt(&cx, &sid, "note that the build is green").await;
            assert_eq!(
                prompt(&cx, &sid, "/compact the greeting").await,
                StopReason::EndTurn
            );
            assert!(
                watch.agent_text().contains("Compacted:"),
                "{}",
                watch.agent_text()
            );
            prompt(&cx, &sid, "go on").await;
            Ok(sid)
        })
        .await
        .unwrap();

    let requests = chat_requests(&server);
    let summary_request = requests
        .iter()
        .find(|r| is_summary_request(&r.body))
        .unwrap();
    let text = summary_request.body.to_string();
    assert!(text.contains("focus on: the greeting"), "{text}");
    // The span is everything before the last answer.
    assert!(text.contains("Hello there.") && !text.contains("Sure, noted."));
    let after = requests.last().unwrap().body.to_string();
    assert!(after.contains(SUMMARY_MARK) && after.contains("Greet, then note things."));
    // The user's messages stay; the summarised answer goes; the last answer stays verbatim.
    assert!(after.contains("note that the build is green") && !after.contains("Hello there."));
    assert!(after.contains("Sure, noted."));

    // A new process loads the session; its next request still carries the summary.
    recording_client(Recorder::default())
        .connect_with(acp_agent(&s.config, &s.root), async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            cx.send_request(LoadSessionRequest::new(sid.clone(), s.root.clone()))
                .block_task()
                .await?;
            assert_eq!(prompt(&cx, &sid, "and now?").await, StopReason::EndTurn);
            Ok(())
        })
        .await
        .unwrap();
    let reloaded = chat_requests(&server).last().unwrap().body.to_string();
    assert!(reloaded.contains("Greet, then note things."), "{reloaded}");
    assert!(
        !reloaded.contains("Hello there."),
        "the summarised round came back"
    );
}

/// `/context` reports, `/clear` starts the model afresh in the same session, `/mode` switches
/// and a bad argument gets a message, none of them reaching the model.
#[tokio::test]
async fn context_clear_and_mode_commands() {
    let server = FakeServer::start().await.unwrap();
    let s = setup(&server);
    server.push(answer("First answer."));
    server.push(answer("Fresh answer."));
    let recorder = Recorder::default();
    let watch = recorder.clone();
    recording_client(recorder)
        .connect_with(acp_agent(&s.config, &s.root), async |cx| {
            let sid = open(&cx, &s.root).await;
            prompt(&cx, &sid, "remember the word pineapple").await;
            watch.clear();
            prompt(&cx, &sid, "/context").await;
            let report = watch.agent_text();
            assert!(report.contains(&format!("of {WINDOW} tokens")), "{report}");
            assert!(report.contains("1 user messages"), "{report}");
            prompt(&cx, &sid, "/clear").await;
            prompt(&cx, &sid, "/mode plan").await;
            assert!(watch.all().iter().any(|n| matches!(
                &n.update,
                SessionUpdate::CurrentModeUpdate(u) if &*u.current_mode_id.0 == "plan"
            )));
            watch.clear();
            prompt(&cx, &sid, "/mode sideways").await;
            assert!(watch.agent_text().contains("Unknown mode `sideways`"));
            assert_eq!(prompt(&cx, &sid, "what word?").await, StopReason::EndTurn);
            Ok(())
        })
        .await
        .unwrap();
    let requests = chat_requests(&server);
    assert_eq!(requests.len(), 2, "commands never reach the model");
    let fresh = requests[1].body.to_string();
    assert!(!fresh.contains("pineapple"), "{fresh}");
    assert!(fresh.contains("what word?"));
}

/// The server rejects a prompt as too long: one retry with a tighter budget; a second
/// rejection in the same turn is the turn's error.
#[tokio::test]
async fn an_overflow_the_server_reports_is_retried_once() {
    let server = FakeServer::start().await.unwrap();
    let s = setup(&server);
    let too_long =
        "This model's maximum context length is 8192 tokens. However, you requested 9100 tokens.";
    server.push(Reply::error(400, too_long));
    server.push(answer("Fits now."));
    server.push(Reply::error(400, too_long));
    server.push(Reply::error(400, too_long));
    let recorder = Recorder::default();
    let watch = recorder.clone();
    recording_client(recorder)
        .connect_with(acp_agent(&s.config, &s.root), async |cx| {
            let sid = open(&cx, &s.root).await;
            assert_eq!(prompt(&cx, &sid, "hello").await, StopReason::EndTurn);
            assert!(watch.agent_text().contains("Fits now."));
            assert!(watch.thought_text().contains("retrying once"));
            let failed = cx
                .send_request(PromptRequest::new(
                    sid.clone(),
                    vec![ContentBlock::from("again".to_string())],
                ))
                .block_task()
                .await;
            let err = failed.expect_err("a second overflow ends the turn");
            assert!(err.message.contains("context"), "{err:?}");
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(chat_requests(&server).len(), 4);
}

/// `hearth run --output json` against a fake server that answers like `kind`; returns the
/// result line and the server.
async fn run_against(server: &FakeServer, model: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let config = root.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[[endpoints]]\nname = \"srv\"\nbase_url = \"{}\"\nmodel = \"{model}\"\n\
             [endpoints.timeouts]\nconnect_secs = 2\nfirst_token_secs = 5\nidle_secs = 5\n",
            server.base_url()
        ),
    )
    .unwrap();
    let mut command = std::process::Command::new(crate::common::hearth_bin::hearth_bin());
    command
        .arg("--config")
        .arg(&config)
        .args(["run", "--output", "json", "-p", "hello"])
        .current_dir(&root)
        .env("HOME", &root)
        .env("XDG_DATA_HOME", root.join("data"))
        .env("RUST_LOG", "warn")
        .env_remove("HEARTH_CONFIG")
        .env_remove("HEARTH_BASE_URL");
    let out = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap()).unwrap()
}

/// The window each server reports reaches the usage hearth shows, with no `context_window` in
/// the config; Ollama gets its `num_ctx` on every request through its native chat.
#[tokio::test]
async fn window_discovery_per_server_kind_end_to_end() {
    // llama.cpp: /props n_ctx.
    let llama = FakeServer::start().await.unwrap();
    llama.set_json(
        "GET",
        "/props",
        json!({"default_generation_settings": {"n_ctx": 16384}}),
    );
    llama.push(answer("hi from llama.cpp"));
    assert_eq!(run_against(&llama, "m").await["usage"]["size"], 16384);

    // vLLM: max_model_len in /v1/models.
    let vllm = FakeServer::start().await.unwrap();
    vllm.set_models(
        json!({"object": "list", "data": [{"id": "Qwen/Qwen3-8B", "max_model_len": 40960}]}),
    );
    vllm.push(answer("hi from vLLM"));
    assert_eq!(
        run_against(&vllm, "Qwen/Qwen3-8B").await["usage"]["size"],
        40960
    );

    // LM Studio: the loaded context length.
    let lms = FakeServer::start().await.unwrap();
    lms.set_json(
        "GET",
        "/api/v0/models/qwen3-8b",
        json!({"id": "qwen3-8b", "state": "loaded", "max_context_length": 40960, "loaded_context_length": 12288}),
    );
    lms.push(answer("hi from LM Studio"));
    assert_eq!(run_against(&lms, "qwen3-8b").await["usage"]["size"], 12288);

    // Ollama: /api/show's num_ctx, sent back as options.num_ctx on /api/chat.
    let ollama = FakeServer::start().await.unwrap();
    ollama.set_json(
        "POST",
        "/api/show",
        json!({"parameters": "num_ctx 8192", "model_info": {"qwen2.context_length": 32768}}),
    );
    ollama.push(Reply::ndjson(&[
        hearth_testkit::ollama_content("hi from Ollama"),
        hearth_testkit::ollama_done("stop", 120, 4),
    ]));
    let result = run_against(&ollama, "qwen2.5-coder:7b").await;
    assert_eq!(result["text"], "hi from Ollama");
    assert_eq!(result["usage"], json!({"used": 124, "size": 8192}));
    let chat: Vec<_> = ollama
        .requests()
        .into_iter()
        .filter(|r| r.path == "/api/chat")
        .collect();
    assert_eq!(chat.len(), 1);
    assert_eq!(chat[0].body["options"]["num_ctx"], 8192);
    assert_eq!(chat[0].body["options"]["num_predict"], 2048);
}

/// A rejection that states the prompt's size and the window (as vLLM, llama.cpp and OpenAI do)
/// teaches hearth both: the retry is fitted to the server's window, and so is everything after.
#[tokio::test]
async fn an_overflow_that_states_the_window_moves_every_later_request_into_it() {
    let server = FakeServer::start().await.unwrap();
    // Nothing reports a window, so hearth assumes its default (8192) until the server says.
    server.push(Reply::error(
        400,
        "This model's maximum context length is 4096 tokens. However, you requested 6000 \
         tokens (5000 in the messages, 1000 in the completion).",
    ));
    server.push(answer("Fits now."));
    let result = run_against(&server, "m").await;
    assert_eq!(result["text"], "Fits now.");
    assert_eq!(result["usage"]["size"], 4096, "{result}");
    let chats = chat_requests(&server);
    assert_eq!(chats.len(), 2);
    // The retry leaves room for the answer inside the stated window.
    assert!(
        chats[1].body["max_tokens"].as_u64().unwrap() <= 1024,
        "{}",
        chats[1].body
    );
}

/// A summary request the server rejects as too long, stating its count and window, teaches
/// hearth as any other rejection does: the turn goes on by elision, and the requests after it
/// are fitted to the window the server stated.
#[tokio::test]
async fn a_summary_rejected_with_counts_teaches_the_window() {
    let server = FakeServer::start().await.unwrap();
    let s = setup(&server);
    for i in 0..5 {
        server.push(read_big(&format!("c{i}"), i));
    }
    server.push(answer("Done anyway."));
    let stated = WINDOW / 2;
    server.push_when(
        SUMMARY_REQUEST,
        Reply::error(
            400,
            &format!(
                "This model's maximum context length is {stated} tokens. However, you \
                 requested 9999 tokens (9000 in the messages, 999 in the completion)."
            ),
        ),
    );
    let watch = one_prompt(&s, "read it five times").await;
    let sizes: Vec<u64> = usage_updates(&watch)
        .iter()
        .map(|(_, size)| *size)
        .collect();
    assert_eq!(sizes.first(), Some(&WINDOW), "{sizes:?}");
    assert_eq!(sizes.last(), Some(&stated), "{sizes:?}");
    assert!(watch.agent_text().contains("Done anyway."));
}

//! Rejections for length against a strict server, end to end: a vLLM-like fake with a
//! 4096-token window (stated only by `/v1/models`' `max_model_len`) that counts tokens its own
//! way and rejects any prompt over the window, as vLLM does. Twelve prompts in one session each
//! read a different kind of file larger than the window (code, prose, data, logs, CJK). After
//! the first rejection in the session there are no more, and with a tokenizer there are none.
//! Each test prints its rejections per 100 requests.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{InitializeRequest, NewSessionRequest, StopReason};
use hearth_testkit::{
    DONE, FakeServer, Reply, WindowGate, chunk_content, chunk_finish, chunk_role, chunk_tool_call,
    chunk_usage,
};
use serde_json::json;

use crate::common::acp_client::{Recorder, recording_client};
use crate::common::acp_requests::prompt;
use crate::common::hearth_bin::acp_agent;

const WINDOW: u32 = 4096;
const SUMMARY_REQUEST: &str = "You are writing a handover note";

/// A tiny deterministic generator, so every file differs in content but not between runs.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) as usize) % below.max(1)
    }

    fn pick<'a>(&mut self, words: &[&'a str]) -> &'a str {
        words[self.next(words.len())]
    }
}

const WORDS: [&str; 16] = [
    "the",
    "window",
    "request",
    "server",
    "counts",
    "tokens",
    "differently",
    "model",
    "answer",
    "configuration",
    "is",
    "a",
    "of",
    "and",
    "streaming",
    "calibration",
];
const IDENTS: [&str; 12] = [
    "ctx",
    "request_builder",
    "x",
    "total_len",
    "HashMap",
    "tokenizer",
    "i",
    "budget_left",
    "Vec",
    "self",
    "fitted_projection",
    "e",
];

/// Twelve files of different kinds, each around 30 kB (far over a 4k window by any count).
fn kinds_of_files(root: &Path) -> Vec<String> {
    let mut rng = Lcg(7);
    let mut files = Vec::new();
    let mut write = |name: &str, line: &mut dyn FnMut(&mut Lcg, usize) -> String| {
        let mut text = String::new();
        let mut n = 0;
        while text.len() < 30_000 {
            text.push_str(&line(&mut rng, n));
            text.push('\n');
            n += 1;
        }
        std::fs::write(root.join(name), text).unwrap();
        files.push(name.to_string());
    };
    write("prose.md", &mut |r, _| {
        (0..14)
            .map(|_| r.pick(&WORDS))
            .collect::<Vec<_>>()
            .join(" ")
            + "."
    });
    write("engine.rs", &mut |r, n| {
        format!(
            "    let {} = {}.{}(&{}[{}..])?; // {}",
            r.pick(&IDENTS),
            r.pick(&IDENTS),
            r.pick(&IDENTS),
            r.pick(&IDENTS),
            n % 97,
            r.pick(&WORDS)
        )
    });
    write("data.json", &mut |r, n| {
        format!(
            "  {{\"id\": {n}, \"score\": {}.{}, \"tag\": \"{}\", \"ok\": true}},",
            r.next(1000),
            r.next(100),
            r.pick(&IDENTS)
        )
    });
    write("numbers.csv", &mut |r, n| {
        format!(
            "{n},{},{},{}.{},{}",
            r.next(100_000),
            r.next(100_000),
            r.next(1000),
            r.next(1000),
            r.next(9)
        )
    });
    write("server.log", &mut |r, n| {
        format!(
            "2026-12-02T12:{:02}:{:02}.{:03}Z INFO hearth::agent: {} {} in {}ms",
            n % 60,
            r.next(60),
            r.next(1000),
            r.pick(&WORDS),
            r.pick(&WORDS),
            r.next(5000)
        )
    });
    write("notes_cjk.md", &mut |r, _| {
        let cjk = [
            "模型",
            "服务器",
            "上下文",
            "窗口",
            "计数",
            "请求",
            "回答",
            "配置",
        ];
        (0..12).map(|_| r.pick(&cjk)).collect::<String>() + "。"
    });
    write("script.py", &mut |r, n| {
        format!(
            "def {}_{n}({}, {}=None):\n    return [{} for {} in range({})]",
            r.pick(&IDENTS),
            r.pick(&IDENTS),
            r.pick(&IDENTS),
            r.pick(&IDENTS),
            r.pick(&IDENTS),
            r.next(50)
        )
    });
    write("bundle.min.js", &mut |r, _| {
        (0..8)
            .map(|_| {
                format!(
                    "{}=({})=>{{{}}};",
                    r.pick(&IDENTS),
                    r.next(9),
                    r.pick(&IDENTS)
                )
            })
            .collect()
    });
    write("config.yaml", &mut |r, n| {
        format!(
            "{}_{n}:\n  {}: {}\n  enabled: {}",
            r.pick(&IDENTS),
            r.pick(&WORDS),
            r.next(65_536),
            n % 2 == 0
        )
    });
    write("page.html", &mut |r, _| {
        format!(
            "<div class=\"{}\"><a href=\"/{}/{}\">{} {}</a></div>",
            r.pick(&IDENTS),
            r.pick(&WORDS),
            r.next(999),
            r.pick(&WORDS),
            r.pick(&WORDS)
        )
    });
    write("Cargo.lock", &mut |r, _| {
        format!(
            "[[package]]\nname = \"{}\"\nversion = \"{}.{}.{}\"\nchecksum = \"{:016x}{:016x}\"",
            r.pick(&IDENTS),
            r.next(3),
            r.next(40),
            r.next(20),
            r.next(usize::MAX),
            r.next(usize::MAX)
        )
    });
    write("build.sh", &mut |r, _| {
        format!(
            "if [ -f \"${}\" ]; then cargo build --{} 2>&1 | tee -a /tmp/{}.log; fi",
            r.pick(&IDENTS).to_uppercase(),
            r.pick(&WORDS),
            r.pick(&IDENTS)
        )
    });
    files
}

fn read_call(id: &str, path: &str) -> Reply {
    Reply::frames(&[
        chunk_role(),
        chunk_tool_call(
            0,
            Some(id),
            Some("read_file"),
            &json!({ "path": path }).to_string(),
        ),
        chunk_finish("tool_calls"),
        chunk_usage(10, 12),
        DONE.to_string(),
    ])
}

fn answer(text: &str) -> Reply {
    Reply::frames(&[
        chunk_role(),
        chunk_content(text),
        chunk_finish("stop"),
        chunk_usage(10, 5),
        DONE.to_string(),
    ])
}

/// A project with the twelve files and a config for `server` (no window in it: the server's
/// `/v1/models` states it), with `tokenizer` when given.
fn project(
    server: &FakeServer,
    tokenizer: Option<&Path>,
) -> (tempfile::TempDir, PathBuf, PathBuf, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let files = kinds_of_files(&root);
    let tokenizer = tokenizer.map_or(String::new(), |t| format!("tokenizer = {:?}\n", t));
    let config = root.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[[endpoints]]\nname = \"vllm\"\nbase_url = \"{}\"\nmodel = \"m\"\n\
             tool_format = \"native\"\n{tokenizer}\
             [endpoints.timeouts]\nconnect_secs = 2\nfirst_token_secs = 5\nidle_secs = 5\n",
            server.base_url()
        ),
    )
    .unwrap();
    (dir, root, config, files)
}

/// Twelve prompts in one session, each reading one file; returns (requests, rejections) as the
/// server counted them, and asserts every turn ended normally.
async fn twelve_reads(
    server: &FakeServer,
    root: &Path,
    config: &Path,
    files: &[String],
) -> (usize, usize) {
    server.set_models(json!({"object": "list", "data": [{"id": "m", "max_model_len": WINDOW}]}));
    for (i, file) in files.iter().enumerate() {
        server.push(read_call(&format!("call{i}"), file));
        server.push(answer(&format!("{file} is read.")));
    }
    for _ in 0..40 {
        server.push_when(SUMMARY_REQUEST, answer("Files were read one by one."));
    }
    let recorder = Recorder::default();
    let files = files.to_vec();
    recording_client(recorder)
        .connect_with(acp_agent(config, root), async move |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await
                .unwrap();
            let sid = cx
                .send_request(NewSessionRequest::new(root.to_path_buf()))
                .block_task()
                .await
                .unwrap()
                .session_id;
            for file in &files {
                let stop = prompt(&cx, &sid, &format!("Read {file} and tell me what it is.")).await;
                assert_eq!(stop, StopReason::EndTurn, "reading {file}");
            }
            Ok(())
        })
        .await
        .unwrap();
    let gated = server.gated();
    let rejected: Vec<usize> = gated
        .iter()
        .enumerate()
        .filter(|(_, g)| g.rejected)
        .map(|(i, _)| i)
        .collect();
    println!(
        "figure: {} requests, {} rejected as too long (at requests {:?}): {:.1} per 100",
        gated.len(),
        rejected.len(),
        rejected,
        100.0 * rejected.len() as f64 / gated.len() as f64
    );
    for g in &gated {
        assert!(g.prompt_tokens > 0);
    }
    (gated.len(), rejected.len())
}

/// Without a tokenizer hearth estimates; the server counts otherwise, and differently for each
/// kind of file. One rejection at most per session (it teaches the count), then none, whatever
/// order the kinds of file come in.
#[tokio::test]
async fn estimated_counts_are_rejected_at_most_once_per_session() {
    for order in 0..4 {
        let server = FakeServer::start().await.unwrap();
        server.set_window_gate(WindowGate::new(WINDOW));
        let (_dir, root, config, mut files) = project(&server, None);
        match order {
            1 => files.reverse(),
            2 => files.rotate_left(5),
            3 => files.sort_by_key(|f| f.len()),
            _ => {}
        }
        let (requests, rejected) = twelve_reads(&server, &root, &config, &files).await;
        assert!(requests >= 24, "{requests} requests");
        assert!(
            rejected <= 1,
            "order {order}: {rejected} of {requests} requests rejected"
        );
    }
}

/// With the server's own tokenizer configured, nothing is rejected at all: what the template
/// adds beyond the texts is reserved for.
#[tokio::test]
async fn exact_counts_are_never_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let tokenizer_path = dir.path().join("tokenizer.json");
    std::fs::write(&tokenizer_path, pretoken_tokenizer().to_string()).unwrap();
    let tokenizer = tokenizers::Tokenizer::from_file(&tokenizer_path).unwrap();
    let count = move |text: &str| {
        tokenizer
            .encode(text, false)
            .map_or(0, |e| u32::try_from(e.len()).unwrap_or(u32::MAX))
    };
    let server = FakeServer::start().await.unwrap();
    server.set_window_gate(WindowGate::new(WINDOW).counting_with(Arc::new(count)));
    let (_project, root, config, files) = project(&server, Some(&tokenizer_path));
    let (requests, rejected) = twelve_reads(&server, &root, &config, &files).await;
    assert!(requests >= 24, "{requests} requests");
    assert_eq!(rejected, 0, "{rejected} of {requests} requests rejected");
}

/// A real tokenizer file whose tokens are Qwen2's pre-tokenizer pieces (every piece maps to the
/// one unknown token): exact by construction for the server that uses the same file.
fn pretoken_tokenizer() -> serde_json::Value {
    json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [],
        "normalizer": null,
        "pre_tokenizer": {
            "type": "Split",
            "pattern": {"Regex": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"},
            "behavior": "Isolated",
            "invert": false
        },
        "post_processor": null,
        "decoder": null,
        "model": {"type": "WordLevel", "vocab": {"<unk>": 0}, "unk_token": "<unk>"}
    })
}

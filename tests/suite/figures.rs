//! Figures for the closing notes, printed, never asserted (`cargo test --release --test all
//! figures -- --ignored --nocapture`): time to the initialize answer, idle RSS, and the latency
//! a streamed chunk gains between the server writing it and the client receiving its update.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeRequest, NewSessionRequest, PromptRequest, SessionNotification,
    SessionUpdate,
};
use agent_client_protocol::{AcpAgent, AcpAgentConfig, Client, on_receive_notification};
use hearth_testkit::{DONE, FakeServer, Reply, Step, chunk_content, chunk_finish};

const CHUNKS: usize = 3000;

#[tokio::test]
#[ignore = "prints figures; run by hand"]
async fn acp_latency_figures() {
    let server = FakeServer::start().await.unwrap();
    let mut steps = Vec::new();
    for i in 0..CHUNKS {
        steps.push(Step::Bytes(chunk_content(&format!("<{i}>")).into_bytes()));
        steps.push(Step::Pause(Duration::from_micros(500)));
    }
    steps.push(Step::Bytes(chunk_finish("stop").into_bytes()));
    steps.push(Step::Bytes(DONE.as_bytes().to_vec()));
    server.push(Reply::Sse(steps));
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[[endpoints]]\nname = \"lan\"\nbase_url = \"{}\"\nmodel = \"m\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let received: Arc<Mutex<Vec<(String, Instant)>>> = Arc::default();
    let sink = received.clone();
    let spawned = Instant::now();
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
                if let SessionUpdate::AgentMessageChunk(c) = n.update
                    && let ContentBlock::Text(t) = c.content
                {
                    sink.lock().unwrap().push((t.text, Instant::now()));
                }
                Ok(())
            },
            on_receive_notification!(),
        )
        .connect_with(agent, async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            println!(
                "spawn -> initialize answered: {:.1} ms",
                spawned.elapsed().as_secs_f64() * 1e3
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
            if let Some(rss) = hearth_rss() {
                println!("idle RSS after initialize: {:.1} MiB", rss as f64 / 1024.0);
            }
            let s = cx
                .send_request(NewSessionRequest::new(home.path().to_path_buf()))
                .block_task()
                .await?;
            cx.send_request(PromptRequest::new(
                s.session_id,
                vec![ContentBlock::from("go".to_string())],
            ))
            .block_task()
            .await?;
            Ok(())
        })
        .await
        .unwrap();
    let written = server.written();
    let received = received.lock().unwrap();
    let mut latencies: Vec<f64> = Vec::new();
    for (text, at) in received.iter() {
        let Some(i) = text
            .strip_prefix('<')
            .and_then(|t| t.strip_suffix('>'))
            .and_then(|t| t.parse::<usize>().ok())
        else {
            continue;
        };
        if let Some(w) = written.get(i) {
            latencies.push(at.duration_since(w.at).as_secs_f64() * 1e6);
        }
    }
    latencies.sort_by(f64::total_cmp);
    let pct = |p: f64| latencies[((latencies.len() as f64 - 1.0) * p) as usize];
    println!(
        "chunk -> session/update over {} chunks: median {:.0} µs, p99 {:.0} µs, max {:.0} µs",
        latencies.len(),
        pct(0.5),
        pct(0.99),
        pct(1.0)
    );
}

/// The RSS of the newest `hearth` child of this process, in KiB.
fn hearth_rss() -> Option<u64> {
    let me = std::process::id().to_string();
    let mut best = None;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
        let field = |k: &str| {
            status
                .lines()
                .find(|l| l.starts_with(k))
                .map(|l| l[k.len()..].trim().to_string())
        };
        if field("Name:").as_deref() == Some("hearth")
            && field("PPid:").as_deref() == Some(me.as_str())
        {
            best = field("VmRSS:").and_then(|v| v.trim_end_matches(" kB").trim().parse().ok());
        }
    }
    best
}

/// `hearth run --batch` throughput against the fake server (each answer takes 50 ms, as a
/// fast server's would) at --jobs 1, 4 and 16, and the REPL's start-up to its first prompt.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "prints figures; run by hand"]
async fn batch_throughput_and_repl_startup_figures() {
    const PROMPTS: usize = 48;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let server = FakeServer::start().await.unwrap();
    let config =
        crate::common::hearth_bin::write_config(&root, &[("fake", &server.base_url(), "m")]);
    let batch: String = (0..PROMPTS)
        .map(|i| format!("{{\"id\": \"p{i}\", \"prompt\": \"say {i}\"}}\n"))
        .collect();
    std::fs::write(root.join("batch.jsonl"), batch).unwrap();
    for jobs in [1, 4, 16] {
        for _ in 0..PROMPTS {
            server.push(Reply::text(&["ok"]).after(Duration::from_millis(50)));
        }
        let mut command = std::process::Command::new(crate::common::hearth_bin::hearth_bin());
        command
            .arg("--config")
            .arg(&config)
            .args([
                "run",
                "--output",
                "json",
                "--jobs",
                &jobs.to_string(),
                "--batch",
            ])
            .arg(root.join("batch.jsonl"))
            .current_dir(&root)
            .env("HOME", &root)
            .env("XDG_DATA_HOME", root.join("data"))
            .env("RUST_LOG", "error");
        let started = Instant::now();
        let out = tokio::task::spawn_blocking(move || command.output().unwrap())
            .await
            .unwrap();
        let secs = started.elapsed().as_secs_f64();
        assert!(out.status.success());
        println!(
            "--jobs {jobs:>2}: {PROMPTS} prompts in {secs:.2} s = {:.1} prompts/s",
            PROMPTS as f64 / secs
        );
    }
    let mut times = Vec::new();
    for _ in 0..5 {
        let mut command = std::process::Command::new(crate::common::hearth_bin::hearth_bin());
        command
            .arg("--config")
            .arg(&config)
            .arg("repl")
            .current_dir(&root)
            .env("HOME", &root)
            .env("XDG_DATA_HOME", root.join("data"))
            .env("RUST_LOG", "error")
            .stdin(std::process::Stdio::null());
        let started = Instant::now();
        let out = tokio::task::spawn_blocking(move || command.output().unwrap())
            .await
            .unwrap();
        assert!(out.status.success());
        times.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "REPL start-up to exit on empty stdin (banner printed, models listed): median {:.0} ms",
        times[2]
    );
}

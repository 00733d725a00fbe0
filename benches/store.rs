//! Session store figures: append + flush latency per round, bytes per round, load + fold time
//! of a 500-round session, and listing time. Prints numbers; asserts nothing.
//!
//! Run: `cargo bench --bench store` (optionally `-- <rounds>`).

use std::time::{Duration, Instant};

use base64::Engine as _;
use chrono::Utc;
use hearth::store::{Record, Round, RoundOutcome, Store, UsageRecord};
use hearth_backend::ContentPart;
use hearth_conversation::{
    AgentEvent, HistoryEntry, PlanEntry, PlanStatus, SessionId, ToolCallId, ToolCallRecord,
    ToolCard, ToolCardUpdate, ToolContent, ToolKind, ToolStatus,
};
use serde_json::json;

/// A round shaped like a real coding turn: a prompt, streamed reasoning and answer (in small
/// chunks, as a backend sends them), an edit with a diff, a command with output, a plan.
fn round(number: u64) -> Round {
    let answer = "The function reads the config twice; I will cache it. ".repeat(24);
    let thought = "Check where load() is called and whether it is hot. ".repeat(10);
    let old = "fn load() -> Config {\n    read_config()\n}\n".repeat(12);
    let new = "fn load() -> &'static Config {\n    CONFIG.get_or_init(read_config)\n}\n".repeat(12);
    let output = "test store::tests::round_trip ... ok\n".repeat(50);
    let (edit, run) = (ToolCallId::generate(), ToolCallId::generate());
    let mut user = vec![ContentPart::text(format!(
        "Round {number}: make load() faster"
    ))];
    if number == 1 {
        let png: Vec<u8> = (0..200_000u32).map(|i| (i * 31 % 251) as u8).collect();
        user.push(ContentPart::Image {
            mime_type: "image/png".into(),
            data: base64::engine::general_purpose::STANDARD.encode(png),
        });
    }
    let chunks = |text: &str, thought: bool| -> Vec<AgentEvent> {
        text.as_bytes()
            .chunks(16)
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .map(|text| match thought {
                true => AgentEvent::AgentThought { text },
                false => AgentEvent::AgentText { text },
            })
            .collect()
    };
    let card = |id: &ToolCallId, kind, title: &str| AgentEvent::ToolCallStarted {
        card: ToolCard {
            id: id.clone(),
            title: title.into(),
            kind,
            status: ToolStatus::InProgress,
            locations: Vec::new(),
            content: Vec::new(),
            raw_input: json!({"path": "src/config.rs"}),
        },
    };
    let done = |id: &ToolCallId, status, content| AgentEvent::ToolCallUpdated {
        id: id.clone(),
        update: ToolCardUpdate {
            status: Some(status),
            content: Some(vec![content]),
            ..Default::default()
        },
    };
    let mut events = chunks(&thought, true);
    events.extend(chunks(&answer, false));
    events.push(AgentEvent::Plan {
        entries: vec![PlanEntry {
            content: "cache the config".into(),
            status: PlanStatus::InProgress,
        }],
    });
    events.push(card(&edit, ToolKind::Edit, "Edit src/config.rs"));
    events.push(done(
        &edit,
        ToolStatus::Completed,
        ToolContent::Diff {
            path: "src/config.rs".into(),
            old_text: Some(old.clone()),
            new_text: new.clone(),
        },
    ));
    events.push(card(&run, ToolKind::Execute, "cargo test"));
    events.push(done(
        &run,
        ToolStatus::Completed,
        ToolContent::Text {
            text: output.clone(),
        },
    ));
    events.push(AgentEvent::Usage {
        used: 1000 * number,
        size: 131_072,
    });
    let history = vec![
        HistoryEntry::User {
            content: user.clone(),
        },
        HistoryEntry::Assistant {
            text: answer,
            reasoning: Some(thought),
            tool_calls: vec![
                ToolCallRecord {
                    id: edit.clone(),
                    name: "edit_file".into(),
                    arguments: json!({"path": "src/config.rs", "old": old, "new": new}),
                },
                ToolCallRecord {
                    id: run.clone(),
                    name: "bash".into(),
                    arguments: json!({"command": "cargo test"}),
                },
            ],
        },
        HistoryEntry::ToolResult {
            call_id: edit,
            name: "edit_file".into(),
            output: "edited".into(),
            is_error: false,
        },
        HistoryEntry::ToolResult {
            call_id: run,
            name: "bash".into(),
            output,
            is_error: false,
        },
    ];
    Round {
        number,
        at: Utc::now(),
        user,
        events,
        history,
        usage: Some(UsageRecord {
            used: 1000 * number,
            size: 131_072,
        }),
        outcome: RoundOutcome::Completed,
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn main() -> anyhow::Result<()> {
    let rounds: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(500);
    let dir = tempfile::tempdir()?;
    let store = Store::new(dir.path().join("data"));
    let cwd = dir.path().join("project");
    std::fs::create_dir_all(&cwd)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let id = SessionId::generate();

    let prepared: Vec<Round> = (1..=rounds).map(round).collect();
    let mut latencies = runtime.block_on(async {
        let writer = store.create(&id, &cwd)?;
        let mut latencies = Vec::with_capacity(prepared.len());
        for r in prepared {
            let start = Instant::now();
            writer.append(Record::Round(r));
            writer.flush().await?;
            latencies.push(start.elapsed());
        }
        anyhow::Ok(latencies)
    })?;
    latencies.sort();
    let path = store.find(&id)?;
    let file_bytes = std::fs::metadata(&path)?.len();
    let blob_bytes: u64 = std::fs::read_dir(store.root().join("blobs"))?
        .filter_map(|e| e.ok()?.metadata().ok())
        .map(|m| m.len())
        .sum();

    let mut loads = Vec::new();
    let mut folds = Vec::new();
    for _ in 0..10 {
        let start = Instant::now();
        let loaded = store.load(&id)?;
        let read = start.elapsed();
        let state = loaded.state();
        loads.push(read);
        folds.push(start.elapsed());
        assert_eq!(state.rounds, rounds);
    }
    loads.sort();
    folds.sort();
    let mut lists = Vec::new();
    for _ in 0..10 {
        let start = Instant::now();
        let page = store.list(Some(&cwd), None, 50)?;
        lists.push(start.elapsed());
        assert_eq!(page.sessions.len(), 1);
    }
    lists.sort();

    println!("session store, {rounds} rounds (one 200 KB image in round 1)");
    println!(
        "append + flush per round: median {}, p90 {}, max {}",
        ms(percentile(&latencies, 0.5)),
        ms(percentile(&latencies, 0.9)),
        ms(percentile(&latencies, 1.0))
    );
    println!(
        "size: session file {file_bytes} B ({} B per round), blobs {blob_bytes} B",
        file_bytes / rounds
    );
    println!(
        "load: median {}; load + fold (history + replay): median {}, max {}",
        ms(percentile(&loads, 0.5)),
        ms(percentile(&folds, 0.5)),
        ms(percentile(&folds, 1.0))
    );
    println!(
        "list (one {rounds}-round session): median {}",
        ms(percentile(&lists, 0.5))
    );
    Ok(())
}

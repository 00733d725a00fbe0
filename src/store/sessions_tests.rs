use hearth_backend::ContentPart;
use hearth_conversation::{AgentEvent, AlwaysRules, HistoryEntry, Mode, ModelRef};

use super::super::record::{Record, RoundOutcome, SettingsRecord, SummaryRecord, coalesce_events};
use super::super::test_support::{
    Fixture, image, rich_round, round_numbers, simple_round, write_session,
};
use super::super::warning::LoadProblem;
use super::super::wire::MISSING_IMAGE_TEXT;
use super::*;

fn cargo_test_rules() -> AlwaysRules {
    let mut rules = AlwaysRules::default();
    rules.allow_programs.insert("cargo".into());
    rules
}

fn all_kinds() -> Vec<Record> {
    let mut failed = simple_round(2, "second");
    failed.outcome = RoundOutcome::Failed {
        message: "endpoint refused".into(),
    };
    let mut cancelled = simple_round(3, "third");
    cancelled.outcome = RoundOutcome::Cancelled;
    vec![
        Record::Settings(SettingsRecord {
            mode: Mode::AcceptEdits,
            model: Some(ModelRef::new("local", "qwen3-8b")),
        }),
        Record::Round(rich_round(1)),
        Record::Round(failed),
        Record::Title {
            title: "Fixing main".into(),
        },
        Record::AlwaysRules {
            rules: cargo_test_rules(),
        },
        Record::Summary(SummaryRecord {
            covers_rounds: 2,
            text: "The user fixed main.rs".into(),
            covers_entries: Some(5),
            start: None,
        }),
        Record::Round(cancelled),
        Record::Settings(SettingsRecord {
            mode: Mode::Plan,
            model: None,
        }),
    ]
}

/// What loading gives back for `records`: the same, with chunks merged.
fn as_stored(records: Vec<Record>) -> Vec<Record> {
    records
        .into_iter()
        .map(|r| match r {
            Record::Round(mut round) => {
                round.events = coalesce_events(round.events);
                Record::Round(round)
            }
            other => other,
        })
        .collect()
}

#[tokio::test]
async fn every_record_kind_round_trips_and_images_are_stored_once() {
    let fx = Fixture::new();
    let id = write_session(&fx, &fx.cwd, all_kinds()).await;

    let loaded = fx.store.load(&id).unwrap();
    assert_eq!(loaded.warnings, vec![]);
    assert_eq!(loaded.header.id, id);
    assert_eq!(loaded.header.cwd, std::fs::canonicalize(&fx.cwd).unwrap());
    assert_eq!(loaded.records, as_stored(all_kinds()));

    // The image appears in the prompt and in history, but its bytes are stored once, as a
    // blob, and not inline in the session file.
    let blobs: Vec<_> = std::fs::read_dir(fx.store.root().join("blobs"))
        .unwrap()
        .collect();
    assert_eq!(blobs.len(), 1);
    let ContentPart::Image { data, .. } = image() else {
        unreachable!()
    };
    let text = std::fs::read_to_string(&loaded.path).unwrap();
    assert!(!text.contains(&data[..100]));
    assert_eq!(text.lines().count(), 1 + all_kinds().len());
}

#[tokio::test]
async fn snapshot_folds_settings_history_replay_and_markers() {
    let fx = Fixture::new();
    let id = write_session(&fx, &fx.cwd, all_kinds()).await;
    let state = fx.store.load(&id).unwrap().state();

    assert_eq!(state.mode, Some(Mode::Plan));
    assert_eq!(state.model, None, "the last settings record wins, whole");
    assert_eq!(state.title.as_deref(), Some("Fixing main"));
    assert_eq!(state.always_rules, Some(cargo_test_rules()));
    assert_eq!(state.summaries.len(), 1);
    assert_eq!(state.rounds, 3);
    assert_eq!(state.next_round, 4);
    assert_eq!(state.usage.map(|u| u.used), Some(300));

    let rich = rich_round(1);
    let expected_history: Vec<HistoryEntry> = [rich.history.clone()]
        .into_iter()
        .chain([2, 3].map(|n| simple_round(n, ["", "", "second", "third"][n as usize]).history))
        .flatten()
        .collect();
    assert_eq!(state.history, expected_history);
    // The image in history came back from its blob, byte for byte.
    assert!(matches!(&state.history[0], HistoryEntry::User { content } if content[1] == image()));

    // Replay: per round, the prompt then what the client saw, chunks merged.
    assert_eq!(
        state.replay[0],
        AgentEvent::UserMessage {
            content: rich.user.clone()
        }
    );
    assert_eq!(
        state.replay[1],
        AgentEvent::AgentThought {
            text: "Let me look.".into()
        }
    );
    assert_eq!(
        state.replay[2],
        AgentEvent::AgentText {
            text: "I will edit it.".into()
        }
    );
    let user_messages = state
        .replay
        .iter()
        .filter(|e| matches!(e, AgentEvent::UserMessage { .. }))
        .count();
    assert_eq!(user_messages, 3);
    assert_eq!(state.replay.len(), (1 + 8) + (1 + 1) + (1 + 1));
}

#[tokio::test]
async fn title_comes_from_the_first_prompt_when_none_is_stored() {
    let fx = Fixture::new();
    let long = format!("  Please   refactor\n the {} module  ", "very ".repeat(30));
    let id = write_session(&fx, &fx.cwd, vec![Record::Round(simple_round(1, &long))]).await;
    let title = fx.store.load(&id).unwrap().state().title.unwrap();
    assert!(
        title.starts_with("Please refactor the very very"),
        "{title}"
    );
    assert_eq!(title.chars().count(), super::super::TITLE_MAX_CHARS);
    assert!(title.ends_with('…'));
}

#[tokio::test]
async fn images_in_replayed_user_messages_are_blobs_too() {
    let fx = Fixture::new();
    let mut round = rich_round(1);
    round.events.insert(
        0,
        AgentEvent::UserMessage {
            content: vec![image()],
        },
    );
    let id = write_session(&fx, &fx.cwd, vec![Record::Round(round.clone())]).await;
    let loaded = fx.store.load(&id).unwrap();
    assert_eq!(loaded.records, as_stored(vec![Record::Round(round)]));
    let text = std::fs::read_to_string(&loaded.path).unwrap();
    assert_eq!(text.matches("\"image_ref\"").count(), 3);
    assert_eq!(
        std::fs::read_dir(fx.store.root().join("blobs"))
            .unwrap()
            .count(),
        1
    );
}

#[tokio::test]
async fn image_data_that_is_not_base64_stays_inline() {
    let fx = Fixture::new();
    let mut round = simple_round(1, "look");
    let odd = ContentPart::Image {
        mime_type: "image/png".into(),
        data: "not base64!".into(),
    };
    round.user.push(odd.clone());
    let id = write_session(&fx, &fx.cwd, vec![Record::Round(round.clone())]).await;
    let loaded = fx.store.load(&id).unwrap();
    assert_eq!(loaded.records, vec![Record::Round(round)]);
    assert!(!fx.store.root().join("blobs").exists());
}

#[tokio::test]
async fn a_missing_blob_becomes_a_placeholder_and_a_warning() {
    let fx = Fixture::new();
    let id = write_session(&fx, &fx.cwd, vec![Record::Round(rich_round(1))]).await;
    std::fs::remove_dir_all(fx.store.root().join("blobs")).unwrap();
    let loaded = fx.store.load(&id).unwrap();
    // Prompt and history each name the blob.
    assert_eq!(loaded.warnings.len(), 2);
    assert!(
        loaded
            .warnings
            .iter()
            .all(|w| w.line == 2 && matches!(w.problem, LoadProblem::MissingBlob(_)))
    );
    let Record::Round(round) = &loaded.records[0] else {
        panic!("{:?}", loaded.records)
    };
    assert_eq!(round.user[1], ContentPart::text(MISSING_IMAGE_TEXT));
}

#[tokio::test]
async fn the_file_appears_with_the_first_record_not_before() {
    let fx = Fixture::new();
    let id = SessionId::generate();
    let writer = fx.store.create(&id, &fx.cwd).unwrap();
    writer.flush().await.unwrap();
    assert!(matches!(
        fx.store.find(&id),
        Err(StoreError::UnknownSession(_))
    ));
    writer.append(Record::Round(simple_round(1, "hi")));
    writer.flush().await.unwrap();
    assert_eq!(fx.store.find(&id).unwrap(), writer.path());
}

#[tokio::test]
async fn a_reopened_session_appends_after_what_is_there() {
    let fx = Fixture::new();
    let id = write_session(&fx, &fx.cwd, vec![Record::Round(simple_round(1, "a"))]).await;
    let writer = fx.store.open_writer(&id).unwrap();
    writer.append(Record::Round(simple_round(2, "b")));
    writer.flush().await.unwrap();
    let loaded = fx.store.load(&id).unwrap();
    assert_eq!(round_numbers(&loaded.records), vec![1, 2]);
    assert_eq!(loaded.warnings, vec![]);
}

#[tokio::test]
async fn unknown_sessions_are_typed_errors() {
    let fx = Fixture::new();
    let id = SessionId::generate();
    assert!(matches!(
        fx.store.load(&id),
        Err(StoreError::UnknownSession(_))
    ));
    assert!(matches!(
        fx.store.delete(&id),
        Err(StoreError::UnknownSession(_))
    ));
    assert!(matches!(
        fx.store.open_writer(&id),
        Err(StoreError::UnknownSession(_))
    ));
    write_session(&fx, &fx.cwd, vec![Record::Round(simple_round(1, "a"))]).await;
    assert!(matches!(
        fx.store.load(&id),
        Err(StoreError::UnknownSession(_))
    ));
}

#[tokio::test]
async fn ids_that_escape_the_store_touch_no_file() {
    let fx = Fixture::new();
    // A file a traversal from a project directory would reach.
    let bait = fx.store.root().join("bait.jsonl");
    std::fs::create_dir_all(fx.store.root().join("sessions/p")).unwrap();
    std::fs::write(&bait, "{}\n").unwrap();
    for raw in ["../../bait", "../bait", "/etc/passwd", "a/b", "", "x\0y"] {
        let id = SessionId::new(raw);
        for result in [
            fx.store.load(&id).map(|_| ()),
            fx.store.delete(&id),
            fx.store.find(&id).map(|_| ()),
            fx.store.open_writer(&id).map(|_| ()),
            fx.store.create(&id, &fx.cwd).map(|_| ()),
        ] {
            assert!(
                matches!(result, Err(StoreError::InvalidId { .. })),
                "{raw:?}: {result:?}"
            );
        }
    }
    assert!(bait.exists());
}

#[tokio::test]
async fn delete_removes_only_that_session() {
    let fx = Fixture::new();
    let a = write_session(&fx, &fx.cwd, vec![Record::Round(simple_round(1, "a"))]).await;
    let b = write_session(&fx, &fx.cwd, vec![Record::Round(simple_round(1, "b"))]).await;
    fx.store.delete(&a).unwrap();
    assert!(matches!(
        fx.store.load(&a),
        Err(StoreError::UnknownSession(_))
    ));
    assert_eq!(round_numbers(&fx.store.load(&b).unwrap().records), vec![1]);
}

#[test]
fn writers_need_a_runtime() {
    let fx = Fixture::new();
    let result = fx.store.create(&SessionId::generate(), &fx.cwd);
    assert!(matches!(result, Err(StoreError::NoRuntime)));
}

#[tokio::test]
async fn a_failed_write_is_reported_by_flush_and_the_writer_recovers() {
    let fx = Fixture::new();
    let id = SessionId::generate();
    let writer = fx.store.create(&id, &fx.cwd).unwrap();
    // Something in the way of the session file.
    std::fs::create_dir_all(writer.path()).unwrap();
    writer.append(Record::Round(simple_round(1, "lost")));
    assert!(matches!(writer.flush().await, Err(StoreError::Io { .. })));
    // Reported once; the next flush is clean.
    writer.flush().await.unwrap();

    std::fs::remove_dir(writer.path()).unwrap();
    writer.append(Record::Round(simple_round(2, "kept")));
    writer.flush().await.unwrap();
    let loaded = fx.store.load(&id).unwrap();
    assert_eq!(
        loaded.header.id, id,
        "the header is written with the first record that lands"
    );
    assert_eq!(round_numbers(&loaded.records), vec![2]);
}

#[tokio::test]
async fn records_queued_before_the_writer_is_dropped_are_written() {
    let fx = Fixture::new();
    let id = SessionId::generate();
    let writer = fx.store.create(&id, &fx.cwd).unwrap();
    for n in 1..=20 {
        writer.append(Record::Round(simple_round(n, "queued")));
    }
    drop(writer);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let rounds = fx.store.load(&id).map(|l| round_numbers(&l.records).len());
        if matches!(rounds, Ok(20)) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "only {rounds:?} rounds written"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

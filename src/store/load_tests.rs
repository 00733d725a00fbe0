use std::io::Write;

use hearth_conversation::SessionId;

use super::super::record::Record;
use super::super::test_support::{Fixture, rich_round, round_numbers, simple_round, write_session};
use super::*;

async fn session_with_rounds(fx: &Fixture, n: u64) -> (SessionId, PathBuf) {
    let records = (1..=n)
        .map(|i| Record::Round(simple_round(i, &format!("prompt {i}"))))
        .collect();
    let id = write_session(fx, &fx.cwd, records).await;
    let path = fx.store.find(&id).unwrap();
    (id, path)
}

/// Byte offset where line `n` (1-based) starts.
fn line_start(bytes: &[u8], n: usize) -> usize {
    if n == 1 {
        return 0;
    }
    bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(n - 2)
        .map(|(i, _)| i + 1)
        .unwrap()
}

#[tokio::test]
async fn a_torn_last_record_is_skipped_with_a_warning() {
    let fx = Fixture::new();
    let (id, path) = session_with_rounds(&fx, 3).await;
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 20]).unwrap();

    let loaded = fx.store.load(&id).unwrap();
    assert_eq!(round_numbers(&loaded.records), vec![1, 2]);
    assert_eq!(
        loaded.warnings,
        vec![LoadWarning {
            file: path.clone(),
            line: 4,
            problem: LoadProblem::TornLastRecord
        }]
    );
}

#[tokio::test]
async fn appending_after_a_torn_record_keeps_the_new_record_whole() {
    let fx = Fixture::new();
    let (id, path) = session_with_rounds(&fx, 3).await;
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 20]).unwrap();

    let writer = fx.store.open_writer(&id).unwrap();
    writer.append(Record::Round(simple_round(4, "after the crash")));
    writer.flush().await.unwrap();

    let loaded = fx.store.load(&id).unwrap();
    assert_eq!(round_numbers(&loaded.records), vec![1, 2, 4]);
    assert_eq!(loaded.warnings.len(), 1);
    assert_eq!(loaded.warnings[0].line, 4);
    assert!(matches!(
        loaded.warnings[0].problem,
        LoadProblem::Corrupt(_)
    ));
}

#[tokio::test]
async fn a_corrupt_middle_line_is_reported_by_number_and_the_rest_loads() {
    let fx = Fixture::new();
    let (id, path) = session_with_rounds(&fx, 4).await;
    let (other, _) = session_with_rounds(&fx, 2).await;
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2] = "{\"type\":\"round\",\"number\":"; // line 3: round 2, hand-damaged
    lines.insert(3, "not json at all");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();

    let loaded = fx.store.load(&id).unwrap();
    assert_eq!(round_numbers(&loaded.records), vec![1, 3, 4]);
    let at: Vec<usize> = loaded.warnings.iter().map(|w| w.line).collect();
    assert_eq!(at, vec![3, 4]);
    assert!(
        loaded
            .warnings
            .iter()
            .all(|w| w.file == path && matches!(w.problem, LoadProblem::Corrupt(_)))
    );
    let message = loaded.warnings[0].to_string();
    assert!(
        message.contains(&format!("{}:3:", path.display())),
        "{message}"
    );
    // Another session of the project is unaffected.
    let other = fx.store.load(&other).unwrap();
    assert_eq!(
        (round_numbers(&other.records), other.warnings),
        (vec![1, 2], vec![])
    );
}

#[tokio::test]
async fn truncation_at_every_offset_of_the_last_record_loses_only_that_record() {
    let fx = Fixture::new();
    let id = write_session(
        &fx,
        &fx.cwd,
        vec![
            Record::Round(simple_round(1, "a")),
            Record::Round(rich_round(2)),
            Record::Round(simple_round(3, "c")),
        ],
    )
    .await;
    let path = fx.store.find(&id).unwrap();
    let blobs = BlobStore::new(fx.store.root().join("blobs"));
    let full = std::fs::read(&path).unwrap();
    let last = line_start(&full, 4);
    for cut in last..=full.len() {
        std::fs::write(&path, &full[..cut]).unwrap();
        let loaded = load_file(&path, Some(&id), &blobs).unwrap();
        let rounds = round_numbers(&loaded.records);
        // Whole when only the newline is missing (the JSON is complete), else dropped.
        let whole = cut >= full.len() - 1;
        assert_eq!(
            rounds,
            if whole { vec![1, 2, 3] } else { vec![1, 2] },
            "cut at {cut}"
        );
        let torn = cut > last && !whole;
        assert_eq!(loaded.warnings.len(), usize::from(torn), "cut at {cut}");
    }
}

#[tokio::test]
async fn header_damage_is_a_typed_error() {
    let fx = Fixture::new();
    let (id, path) = session_with_rounds(&fx, 1).await;
    let text = std::fs::read_to_string(&path).unwrap();
    let round_line = text.lines().nth(1).unwrap().to_string();

    std::fs::write(&path, format!("garbage\n{round_line}\n")).unwrap();
    assert!(matches!(
        fx.store.load(&id),
        Err(StoreError::Corrupt { line: 1, .. })
    ));

    std::fs::write(&path, format!("{round_line}\n")).unwrap();
    assert!(matches!(
        fx.store.load(&id),
        Err(StoreError::Corrupt { line: 1, .. })
    ));

    std::fs::write(&path, "").unwrap();
    assert!(matches!(
        fx.store.load(&id),
        Err(StoreError::Corrupt { line: 1, .. })
    ));

    let future = text
        .lines()
        .next()
        .unwrap()
        .replace("\"version\":1", "\"version\":99");
    std::fs::write(&path, format!("{future}\n{round_line}\n")).unwrap();
    assert!(matches!(
        fx.store.load(&id),
        Err(StoreError::UnsupportedVersion { version: 99, .. })
    ));
}

#[tokio::test]
async fn blank_lines_extra_headers_and_a_copied_file_are_tolerated() {
    let fx = Fixture::new();
    let (id, path) = session_with_rounds(&fx, 2).await;
    let text = std::fs::read_to_string(&path).unwrap();
    let header = text.lines().next().unwrap().to_string();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    write!(file, "\n   \n{header}\n").unwrap();

    let loaded = fx.store.load(&id).unwrap();
    assert_eq!(round_numbers(&loaded.records), vec![1, 2]);
    assert_eq!(loaded.warnings.len(), 1);
    assert_eq!(
        (loaded.warnings[0].line, &loaded.warnings[0].problem),
        (6, &LoadProblem::ExtraHeader)
    );

    // The same file under another id: the file name wins.
    let copy = SessionId::generate();
    std::fs::copy(&path, path.with_file_name(format!("{copy}.jsonl"))).unwrap();
    let loaded = fx.store.load(&copy).unwrap();
    assert_eq!(loaded.header.id, copy);
    assert!(matches!(
        loaded.warnings[0].problem,
        LoadProblem::IdMismatch { .. }
    ));
}

#[test]
fn split_lines_reports_numbers_and_termination() {
    let lines: Vec<_> = split_lines(b"a\n\nbc\nd").collect();
    assert_eq!(
        lines,
        vec![
            (1, &b"a"[..], true),
            (2, &b""[..], true),
            (3, &b"bc"[..], true),
            (4, &b"d"[..], false)
        ]
    );
    assert_eq!(split_lines(b"").count(), 0);
    assert_eq!(split_lines(b"x\n").count(), 1);
}

/// The version-1 format as documented, written by hand: a file like this must always load.
#[test]
fn a_hand_written_version_1_file_loads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s-1.jsonl");
    let lines = [
        r#"{"type":"header","version":1,"id":"s-1","cwd":"/home/ann/app","created_at":"2026-01-02T03:04:05Z"}"#,
        r#"{"type":"settings","mode":"accept-edits","model":{"endpoint":"local","model":"qwen3"}}"#,
        r#"{"type":"round","number":1,"at":"2026-01-02T03:05:00Z","user":[{"type":"text","text":"hi"}],"events":[{"type":"agent_text","text":"hello"}],"history":[{"type":"user","content":[{"type":"text","text":"hi"}]},{"type":"assistant","text":"hello"}],"usage":{"used":10,"size":100},"outcome":{"status":"completed"}}"#,
        r#"{"type":"round","number":2,"at":"2026-01-02T03:06:00Z","outcome":{"status":"failed","message":"boom"}}"#,
        r#"{"type":"title","title":"Greeting"}"#,
        r#"{"type":"always_rules","rules":{"allow_programs":["cargo"],"reject_tools":["write_file"]}}"#,
        r#"{"type":"summary","covers_rounds":1,"text":"said hi"}"#,
    ];
    std::fs::write(&path, lines.join("\n")).unwrap();
    let loaded = load_file(&path, None, &BlobStore::new(dir.path().join("blobs"))).unwrap();
    assert_eq!(loaded.warnings, vec![]);
    assert_eq!(loaded.records.len(), 6);
    let state = loaded.state();
    assert_eq!(state.cwd, PathBuf::from("/home/ann/app"));
    assert_eq!(state.mode, Some(hearth_conversation::Mode::AcceptEdits));
    assert_eq!(state.model.map(|m| m.model).as_deref(), Some("qwen3"));
    assert_eq!(state.history.len(), 2);
    assert_eq!(state.replay.len(), 2);
    assert_eq!((state.rounds, state.next_round), (2, 3));
    assert_eq!(state.title.as_deref(), Some("Greeting"));
    let rules = state.always_rules.unwrap();
    assert!(rules.allow_programs.contains("cargo") && rules.reject_tools.contains("write_file"));
    assert_eq!(state.summaries[0].covers_rounds, 1);
    let Record::Round(failed) = &loaded.records[2] else {
        panic!("{:?}", loaded.records[2])
    };
    assert_eq!(
        failed.outcome,
        super::super::RoundOutcome::Failed {
            message: "boom".into()
        }
    );
}

/// "Always" rules are typed on disk: a record of another shape is reported, never read as "no
/// rules" in silence, and the rules stored before it stay in force.
#[test]
fn always_rules_of_the_wrong_shape_are_reported_and_the_earlier_ones_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s-2.jsonl");
    let lines = [
        r#"{"type":"header","version":1,"id":"s-2","cwd":"/p","created_at":"2026-01-02T03:04:05Z"}"#,
        r#"{"type":"always_rules","rules":{"allow_programs":["ls"]}}"#,
        r#"{"type":"always_rules","rules":{"allow_tools":"everything"}}"#,
        r#"{"type":"always_rules","rules":{"allow_everything":true}}"#,
    ];
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let loaded = load_file(&path, None, &BlobStore::new(dir.path().join("blobs"))).unwrap();
    let lines_warned: Vec<usize> = loaded.warnings.iter().map(|w| w.line).collect();
    assert_eq!(lines_warned, [3, 4]);
    assert!(
        loaded
            .warnings
            .iter()
            .all(|w| matches!(w.problem, LoadProblem::Corrupt(_)))
    );
    let rules = loaded.state().always_rules.unwrap();
    assert!(rules.allow_programs.contains("ls"));
    assert!(rules.allow_tools.is_empty());
}

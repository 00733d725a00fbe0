//! Hashes no tool showed (the ground_hashes assist), driven through the agent core with a
//! scripted model: a made-up checksum gets one nudge that spells out the command, the checksum
//! the command prints is answered without a note, and one made up twice keeps a note that
//! tells the user it was not computed.

use hearth::agent::StopReason;

use crate::common::fake_backend::FakeBackend;
use crate::common::scripted_turn::{last_message, prompt_with, reply};

const ASKED: &str = "What is the sha256 checksum of payload.txt?";

/// What the 0.5B answers after reading the file: 64 hex digits of its own.
const MADE_UP: &str =
    "The checksum is 4e7b9f0a8c3d4e7b9f0a8c3d4e7b9f0a8c3d4e7b9f0a8c3d4e7b9f0a8c3d4e7b.";

async fn run(answers: &[&str], agent: &str) -> (FakeBackend, String, tempfile::TempDir) {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("payload.txt"), "hearth\n").unwrap();
    let backend = FakeBackend::default();
    for answer in answers {
        reply(&backend, answer);
    }
    let (stop, front) = prompt_with(&backend, project.path(), "hermes", agent, ASKED).await;
    assert_eq!(stop, StopReason::EndTurn);
    (backend, front.answer(), project)
}

fn sha256_of_payload(project: &std::path::Path) -> Option<String> {
    let out = std::process::Command::new("sha256sum")
        .arg("payload.txt")
        .current_dir(project)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    Some(text.split_whitespace().next()?.to_string())
}

#[tokio::test]
async fn a_made_up_checksum_is_computed_with_the_spelled_out_command() {
    let call = "<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"sha256sum payload.txt\"}}\n</tool_call>";
    let probe = tempfile::tempdir().unwrap();
    std::fs::write(probe.path().join("payload.txt"), "hearth\n").unwrap();
    let Some(real) = sha256_of_payload(probe.path()) else {
        return;
    };
    let answer = format!("It is {real}.");
    let (backend, shown, _project) = run(&[MADE_UP, call, &answer], "").await;
    let requests = backend.requests();
    assert_eq!(requests.len(), 3);
    let nudge = last_message(&backend, 1);
    assert!(
        nudge.starts_with("Your answer gives the hash 4e7b9f0a8c3d4e7b…, but no tool result"),
        "{nudge}"
    );
    assert!(
        nudge.contains(
            "<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\":\"sha256sum payload.txt\"}}\n</tool_call>"
        ),
        "{nudge}"
    );
    // The command's output is in the next request, and the answer from it stands alone.
    assert!(last_message(&backend, 2).contains(&real));
    assert!(shown.ends_with(&answer), "{shown}");
    assert!(!shown.contains("Note:"), "{shown}");
}

#[tokio::test]
async fn a_checksum_made_up_twice_keeps_a_note_and_the_assist_can_be_turned_off() {
    let (backend, shown, _project) = run(&[MADE_UP, MADE_UP], "").await;
    assert_eq!(backend.requests().len(), 2);
    assert!(
        shown.ends_with(
            "Note: no tool output of this turn shows the hash 4e7b9f0a8c3d4e7b…; it was not computed and may well be made up."
        ),
        "{shown}"
    );

    let (backend, shown, _project) = run(&[MADE_UP], "assists_off = [\"ground_hashes\"]").await;
    assert_eq!(backend.requests().len(), 1);
    assert_eq!(shown, MADE_UP);
}

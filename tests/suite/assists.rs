//! The assists that make small models finish tasks, each driven through the agent core with a
//! scripted model: an invented tool is answered instead of shown, a repeated call and a blank
//! answer get one nudge and then an honest stop, named files and the project's layout ride along
//! with the prompt, and a native server's call left in the text still runs.

use std::path::Path;
use std::sync::Arc;

use hearth::agent::StopReason;
use hearth::host::LocalClientOps;
use hearth_backend::{ContentPart, FinishReason, Role};
use hearth_conversation::AgentEvent;

use crate::common::fake_backend::{FakeBackend, agent_core_with, finish, text};
use crate::common::scripted_turn::{Front, last_message, prompt, prompt_with, reply};

#[tokio::test]
async fn an_invented_tool_is_answered_with_the_real_ones_and_never_shown_as_the_answer() {
    let project = tempfile::tempdir().unwrap();
    let backend = FakeBackend::default();
    reply(
        &backend,
        "```json\n{\"name\": \"write_fizzbuzz\", \"arguments\": {\"n\": 15}}\n```",
    );
    reply(&backend, "```rust\nfn main() {}\n```");
    let (stop, front) = prompt(&backend, project.path(), "hermes", "write fizzbuzz").await;
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(front.answer(), "```rust\nfn main() {}\n```");
    let told = last_message(&backend, 1);
    assert!(told.contains("unknown tool `write_fizzbuzz`"), "{told}");
    assert!(
        told.contains("read_file") && told.contains("plain text"),
        "{told}"
    );
}

#[tokio::test]
async fn a_repeated_call_is_not_run_again_and_a_second_repeat_round_ends_the_turn() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("a.txt"), "alpha\n").unwrap();
    let backend = FakeBackend::default();
    let read = "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n</tool_call>";
    for _ in 0..3 {
        reply(&backend, read);
    }
    reply(&backend, "never asked");
    // The nudge as the conversation carries it (the answer digest asks without it).
    let off = "assists_off = [\"answer_digest\"]";
    let (stop, front) = prompt_with(&backend, project.path(), "hermes", off, "read a.txt").await;
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(backend.requests().len(), 3, "the third round is the last");
    let told = last_message(&backend, 2);
    assert!(told.contains("Not run again"), "{told}");
    assert!(
        told.contains("Its result was:\n") && told.contains("alpha"),
        "{told}"
    );
    let requests = backend.requests();
    assert!(!requests[1].answer_only && requests[2].answer_only);
    assert!(!requests[1].stop.iter().any(|s| s == "<tool_call>"));
    assert!(
        requests[2].stop.iter().any(|s| s == "<tool_call>"),
        "a server that cannot be held to text stops where a call opens"
    );
    assert_eq!(
        front
            .card_titles()
            .iter()
            .filter(|t| t.starts_with("Repeated"))
            .count(),
        1
    );
    assert!(
        front
            .answer()
            .contains("kept repeating the same `read_file` call")
    );
}

/// A backend that lists the directory, answers blank, then answers.
fn lists_then_answers_blank_then_answers() -> FakeBackend {
    let backend = FakeBackend::default();
    reply(
        &backend,
        "<tool_call>\n{\"name\": \"list_dir\", \"arguments\": {}}\n</tool_call>",
    );
    reply(&backend, "\n\n\n");
    reply(&backend, "The directory is empty.");
    backend
}

#[tokio::test]
async fn a_blank_answer_is_asked_again_once_then_the_turn_says_why_it_ended() {
    let project = tempfile::tempdir().unwrap();
    let backend = lists_then_answers_blank_then_answers();
    let no_digest = "assists_off = [\"answer_digest\"]";
    let (_, front) = prompt_with(
        &backend,
        project.path(),
        "hermes",
        no_digest,
        "what is here?",
    )
    .await;
    assert!(last_message(&backend, 2).contains("Your last reply was empty"));
    assert!(front.answer().ends_with("The directory is empty."));
    assert!(
        backend.requests()[2].answer_only,
        "the answer after a blank one must be text"
    );

    // Without the assist the same nudge is given, and the answer is not insisted on.
    let backend = lists_then_answers_blank_then_answers();
    let off = "assists_off = [\"answer_round\", \"answer_digest\"]";
    prompt_with(&backend, project.path(), "hermes", off, "what is here?").await;
    assert!(last_message(&backend, 2).contains("Your last reply was empty"));
    assert!(backend.requests().iter().all(|r| !r.answer_only));

    let backend = FakeBackend::default();
    reply(&backend, "\n");
    reply(&backend, " ");
    reply(&backend, "never asked");
    let (stop, front) = prompt(&backend, project.path(), "hermes", "hello?").await;
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(backend.requests().len(), 2);
    assert!(front.answer().contains("gave no answer"));
}

#[tokio::test]
async fn after_a_repeat_or_a_blank_answer_the_answer_is_asked_from_a_digest_of_the_results() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("a.txt"), "alpha\n").unwrap();
    for format in ["hermes", "native"] {
        let backend = FakeBackend::default();
        let read = "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n</tool_call>";
        reply(&backend, read);
        reply(&backend, read);
        reply(&backend, "a.txt says alpha.");
        let (stop, front) = prompt(&backend, project.path(), format, "What does it say?").await;
        assert_eq!(stop, StopReason::EndTurn, "{format}");
        assert!(front.answer().ends_with("a.txt says alpha."), "{format}");
        let digest = &backend.requests()[2];
        assert!(digest.answer_only && digest.tools.is_empty(), "{format}");
        let roles: Vec<Role> = digest.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::System, Role::User], "{format}");
        let system = digest.messages[0].plain_text();
        assert!(
            system.contains("The tools have already been run"),
            "{system}"
        );
        assert!(
            !system.contains("<tools>") && !system.contains("read_file"),
            "{system}"
        );
        assert!(system.contains("The project is at"), "{system}");
        let user = digest.messages[1].plain_text();
        assert!(
            user.ends_with("\talpha\n</context>\n\nWhat does it say?")
                && user.contains("<context path=\"a.txt\">\n"),
            "{format}: {user}"
        );
        assert!(digest.max_tokens.is_some_and(|t| t <= 2048), "{format}");
        if format == "hermes" {
            assert!(digest.stop.iter().any(|s| s == "<tool_call>"));
        }
    }
    // A blank answer after results: the same.
    let backend = lists_then_answers_blank_then_answers();
    let (_, front) = prompt(&backend, project.path(), "hermes", "what is here?").await;
    assert!(front.answer().ends_with("The directory is empty."));
    let user = backend.requests()[2].messages[1].plain_text();
    assert!(
        user.contains("<context>\n") && user.contains("a.txt"),
        "{user}"
    );
    assert!(!user.contains("Your last reply was empty"), "{user}");
}

#[tokio::test]
async fn a_call_copied_from_the_worked_example_is_not_run_unless_the_request_names_it() {
    let copy = "<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"notes.txt\", \"content\": \"hi\\n\"}}\n</tool_call>";
    let project = tempfile::tempdir().unwrap();
    let backend = FakeBackend::default();
    reply(&backend, copy);
    reply(&backend, "```rust\nfn main() {}\n```");
    let (stop, front) = prompt(&backend, project.path(), "hermes", "write fizzbuzz in rust").await;
    assert_eq!(stop, StopReason::EndTurn);
    let system = backend.requests()[0].messages[0].plain_text();
    assert!(
        system.contains("# How to use the tools"),
        "the example is shown: {system}"
    );
    assert!(
        !project.path().join("notes.txt").exists(),
        "the copy never ran"
    );
    assert_eq!(front.card_titles(), ["Example call to write_file"]);
    assert!(front.answer().ends_with("fn main() {}\n```"));
    // After a round of nothing but copies the answer is due: the digest asks the prompt alone.
    let digest = &backend.requests()[1];
    assert!(digest.answer_only);
    assert_eq!(digest.messages[1].plain_text(), "write fizzbuzz in rust");

    // A request that names the example's values gets the call run.
    let backend = FakeBackend::default();
    reply(&backend, copy);
    reply(&backend, "Done.");
    prompt(&backend, project.path(), "hermes", "Put hi in notes.txt").await;
    assert_eq!(
        std::fs::read_to_string(project.path().join("notes.txt")).unwrap(),
        "hi\n"
    );
}

#[tokio::test]
async fn a_written_file_that_does_not_parse_is_reported_to_the_model_with_the_parsers_words() {
    let write = |content: &str| {
        format!(
            "<tool_call>\n{{\"name\": \"write_file\", \"arguments\": {{\"path\": \"config.json\", \"content\": {}}}}}\n</tool_call>",
            serde_json::to_string(content).unwrap()
        )
    };
    for (content, assists, told) in [
        ("<the complete content of config.json>", "", true),
        ("{\"port\": 8080}", "", false),
        (
            "<the complete content of config.json>",
            "assists_off = [\"check_writes\"]",
            false,
        ),
    ] {
        let project = tempfile::tempdir().unwrap();
        let backend = FakeBackend::default();
        reply(&backend, &write(content));
        reply(&backend, "Done.");
        // A file still broken is asked for again (answer_edits): the answer has no block.
        reply(&backend, "I cannot.");
        let words = "Create config.json with port 8080";
        prompt_with(&backend, project.path(), "hermes", assists, words).await;
        let result = last_message(&backend, 1);
        assert!(result.contains("config.json"), "{result}");
        assert_eq!(
            result
                .contains("But config.json is not valid JSON: expected value at line 1 column 1."),
            told,
            "{content} / {assists}: {result}"
        );
    }
}

#[tokio::test]
async fn the_answers_code_is_written_to_a_file_the_turn_left_broken_when_it_parses() {
    let placeholder = "<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"config.json\", \"content\": \"<the content>\"}}\n</tool_call>";
    for (answer, written) in [
        ("```json\n{\"port\": 8080}\n```", Some("{\"port\": 8080}\n")),
        // One block that parses beside one that does not (an echo of a result).
        (
            "```json\n{\"port\": 8080}\n``````json\nCreated config.json (1 line).\n```",
            Some("{\"port\": 8080}\n"),
        ),
        // Code that does not parse either, two blocks that do, or another language: the
        // file is left as it is.
        ("```json\n{\"port\": \n```", None),
        ("```json\n{}\n```\n```json\n[]\n```", None),
        ("```python\nprint(1)\n```", None),
    ] {
        let project = tempfile::tempdir().unwrap();
        let backend = FakeBackend::default();
        reply(&backend, placeholder);
        reply(&backend, answer);
        // With no block to write, the file is asked for again whole (answer_edits), and the
        // answer to that has none either.
        reply(&backend, "I cannot.");
        let words = "Create config.json with port 8080";
        let (stop, front) = prompt(&backend, project.path(), "hermes", words).await;
        assert_eq!(stop, StopReason::EndTurn);
        let requests = if written.is_some() { 2 } else { 3 };
        assert_eq!(backend.requests().len(), requests, "{answer}");
        let file = std::fs::read_to_string(project.path().join("config.json")).unwrap();
        assert_eq!(file, written.unwrap_or("<the content>"), "{answer}");
        let writes = front.card_titles().len();
        assert_eq!(writes, if written.is_some() { 2 } else { 1 }, "{answer}");
    }
    // An edited file may have been broken before the turn: a block of the answer never
    // replaces it whole, and the model is asked to fix its edit, not to rewrite the file.
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("app.json"), "{oops\n").unwrap();
    let backend = FakeBackend::default();
    reply(
        &backend,
        "<tool_call>\n{\"name\": \"edit_file\", \"arguments\": {\"path\": \"app.json\", \"edits\": [{\"old_text\": \"oops\", \"new_text\": \"oops2\"}]}}\n</tool_call>",
    );
    reply(&backend, "```json\n{\"a\": 1}\n```");
    prompt(
        &backend,
        project.path(),
        "hermes",
        "Rename oops in app.json",
    )
    .await;
    let file = std::fs::read_to_string(project.path().join("app.json")).unwrap();
    assert_eq!(file, "{oops2\n");
    let result = last_message(&backend, 1);
    assert!(
        result.contains("If your edit broke it, fix that with edit_file."),
        "{result}"
    );
}

#[tokio::test]
async fn the_prompts_terms_are_looked_up_and_the_lines_that_hold_them_ride_along() {
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join("src")).unwrap();
    std::fs::write(
        project.path().join("src/db.py"),
        "def connect_db(url):\n    return url\n",
    )
    .unwrap();
    std::fs::write(
        project.path().join("src/orders.py"),
        "def load_orders():\n    return connect_db(\"sqlite://\")\n",
    )
    .unwrap();
    let words = "Which function in the src directory calls connect_db?";
    for (agent, looked_up) in [("", true), ("assists_off = [\"lookup_terms\"]", false)] {
        let backend = FakeBackend::default();
        reply(&backend, "load_orders calls it.");
        prompt_with(&backend, project.path(), "hermes", agent, words).await;
        let sent = backend.requests()[0].messages.last().unwrap().plain_text();
        let hit = "src/orders.py, line 2, in `def load_orders():`:\ndef load_orders():\n    return connect_db(\"sqlite://\")\n";
        assert_eq!(sent.contains(hit), looked_up, "{sent}");
        assert!(sent.ends_with(words), "the question comes last: {sent}");
    }
}

#[tokio::test]
async fn files_the_prompt_names_ride_along_but_never_secrets_or_files_outside() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("far.py"), "FAR = 1\n").unwrap();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("greet.py"), "print('howdy')\n").unwrap();
    std::fs::write(project.path().join(".env"), "TOKEN=hunter2\n").unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("far.py"),
        project.path().join("link.py"),
    )
    .unwrap();
    std::fs::write(project.path().join("big.txt"), "x".repeat(64 * 1024)).unwrap();
    // A FIFO would block a reader forever: only regular files are read.
    let fifo = std::process::Command::new("mkfifo")
        .arg(project.path().join("pipe.txt"))
        .status()
        .unwrap();
    assert!(fifo.success());
    let backend = FakeBackend::default();
    reply(&backend, "It prints howdy.");
    let words = "What do greet.py, .env, link.py, big.txt, pipe.txt, ../far.py and missing.py do?";
    prompt(&backend, project.path(), "hermes", words).await;
    let request = &backend.requests()[0];
    let user = request
        .messages
        .iter()
        .rfind(|m| m.role == Role::User)
        .unwrap();
    let sent: String = user
        .content
        .iter()
        .filter_map(|p| match p {
            ContentPart::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        sent.contains("<context file=\"greet.py\">\nprint('howdy')\n</context>"),
        "{sent}"
    );
    assert!(sent.ends_with(words), "the question comes last: {sent}");
    for never in ["hunter2", "FAR = 1", "xxxxxxxx"] {
        assert!(!sent.contains(never), "{never} was attached");
    }
}

#[tokio::test]
async fn a_sessions_first_prompt_carries_the_project_layout_and_the_replay_shows_only_the_words() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("LICENSE"), "zlib\n").unwrap();
    std::fs::create_dir(project.path().join("src")).unwrap();
    std::fs::write(project.path().join("src/clock.py"), "# TODO\n").unwrap();
    let backend = FakeBackend::default();
    reply(&backend, "zlib");
    reply(&backend, "Yes.");
    let data = tempfile::tempdir().unwrap();
    let core = agent_core_with(&backend, data.path(), "hermes", "")
        .with_store(hearth::store::Store::new(data.path()));
    let session = core.new_session(
        project.path().to_path_buf(),
        core.default_settings(None, None, &[]),
    );
    let front = Arc::new(Front::default());
    let client = LocalClientOps::new(front.clone());
    for words in ["Which license?", "Sure?"] {
        let ticket = session.begin_turn();
        core.run_prompt(&session, &ticket, vec![ContentPart::text(words)], &client)
            .await
            .unwrap();
    }
    let asked = |n: usize| backend.requests()[n].messages.last().unwrap().plain_text();
    assert_eq!(
        asked(0),
        "<context listing=\"project files\">\nLICENSE\nsrc/\n  clock.py\n</context>\n\n\
         Which license?"
    );
    assert_eq!(
        last_message(&backend, 1),
        "Sure?",
        "only the first prompt has it"
    );
    let stored = core.stored_snapshot(&session.id).unwrap();
    assert_eq!(stored.title.as_deref(), Some("Which license?"));
    let shown: Vec<String> = stored
        .replay
        .iter()
        .filter_map(|e| match e {
            AgentEvent::UserMessage { content } => {
                Some(content.iter().map(|p| format!("{p:?}")).collect())
            }
            _ => None,
        })
        .collect();
    assert!(!shown[0].contains("<context"), "{shown:?}");
    // The model still sees it when the session is resumed.
    assert!(format!("{:?}", stored.history[0]).contains("clock.py"));

    let backend = FakeBackend::default();
    reply(&backend, "zlib");
    let off = "assists_off = [\"project_map\"]";
    prompt_with(&backend, project.path(), "hermes", off, "Which license?").await;
    let request = &backend.requests()[0];
    assert_eq!(
        request.messages.last().unwrap().plain_text(),
        "Which license?"
    );
}

#[tokio::test]
async fn code_shown_instead_of_written_gets_one_nudge_and_files_that_changed_or_questions_none() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("app.py"), "print('Welcom')\n").unwrap();
    let backend = FakeBackend::default();
    reply(&backend, "```python\nprint('hi')\n```");
    reply(
        &backend,
        "<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"hello.py\", \
         \"content\": \"print('hi')\\n\"}}\n</tool_call>",
    );
    reply(&backend, "I created hello.py.");
    // The nudge is what a request gets with the answer's code not taken (answer_edits).
    let answer_edits_off = "assists_off = [\"answer_edits\"]";
    let (stop, front) = prompt_with(
        &backend,
        project.path(),
        "hermes",
        answer_edits_off,
        "Create hello.py that prints hi, and fix the typo in app.py",
    )
    .await;
    assert_eq!(stop, StopReason::EndTurn);
    let nudge = last_message(&backend, 1);
    assert!(
        nudge.starts_with(
            "You have not changed any file yet: hello.py does not exist, app.py is as it was."
        ) && nudge.ends_with(
            "<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"hello.py\", \
             \"content\": \"<the complete content of hello.py>\"}}\n</tool_call>"
        ),
        "{nudge}"
    );
    assert_eq!(
        std::fs::read_to_string(project.path().join("hello.py")).unwrap(),
        "print('hi')\n"
    );
    assert!(front.answer().ends_with("I created hello.py."));
    // hello.py changed, so the answer after the call stands although app.py did not.
    assert_eq!(backend.requests().len(), 3);
    let call_first: Vec<bool> = backend.requests().iter().map(|r| r.call_first).collect();
    assert_eq!(
        call_first,
        [false, true, false],
        "the answer to the nudge must be a call"
    );

    // A second answer that still changes nothing ends the turn: the nudge comes once.
    let backend = FakeBackend::default();
    reply(&backend, "```python\nprint('Welcome')\n```");
    reply(&backend, "Done, app.py is fixed.");
    let words = "Fix the typo in app.py";
    prompt_with(&backend, project.path(), "hermes", answer_edits_off, words).await;
    assert_eq!(backend.requests().len(), 2);

    // Questions, requests for code, and the assist turned off get no nudge.
    for (agent, words) in [
        ("", "How do I fix the typo in app.py?"),
        ("", "Write a function that reads app.py"),
        (
            "assists_off = [\"unchanged_files\"]",
            "Fix the typo in app.py",
        ),
    ] {
        let backend = FakeBackend::default();
        reply(&backend, "```python\nprint('Welcome')\n```");
        prompt_with(&backend, project.path(), "hermes", agent, words).await;
        assert_eq!(backend.requests().len(), 1, "{words} {agent}");
    }
}

#[tokio::test]
async fn a_native_server_that_leaves_a_call_in_the_text_still_gets_it_run() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("a.txt"), "alpha\n").unwrap();
    let backend = FakeBackend::default();
    reply(
        &backend,
        "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}",
    );
    reply(&backend, "It says alpha.");
    let (_, front) = prompt(&backend, project.path(), "native", "what is in a.txt?").await;
    assert_eq!(front.answer(), "It says alpha.");
    let request = &backend.requests()[1];
    let result = request.messages.last().unwrap();
    assert_eq!(result.role, Role::Tool);
    let text = result.plain_text();
    assert!(
        text.contains("alpha") && text.contains("\n\n(My request was: \"what is in a.txt?\""),
        "{text}"
    );
}

/// An answer that tells the user to run one of hearth's tools is asked, once, to make the call;
/// the turn then goes on from the tool's result, which the last request follows with a
/// reminder of the task.
#[tokio::test]
async fn a_narrated_call_is_asked_to_be_made_once_and_the_task_is_restated_after_results() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("alpha.txt"), "a\n").unwrap();
    let backend = FakeBackend::default();
    reply(
        &backend,
        "To list the files, you can use the `list_dir` function.",
    );
    reply(
        &backend,
        "<tool_call>\n{\"name\": \"list_dir\", \"arguments\": {}}\n</tool_call>",
    );
    reply(&backend, "It holds alpha.txt.");
    let (stop, front) = prompt(&backend, project.path(), "hermes", "Which files are here?").await;
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(backend.requests().len(), 3);
    let nudge = last_message(&backend, 1);
    assert!(nudge.contains("You described using `list_dir`"), "{nudge}");
    assert!(
        nudge.contains("{\"name\": \"list_dir\", \"arguments\""),
        "{nudge}"
    );
    let after = last_message(&backend, 2);
    assert!(after.contains("alpha.txt"), "{after}");
    assert!(
        after.ends_with(
            "(My request was: \"Which files are here?\". Answer it from the tool results above; \
             call another tool only if you still need one.)"
        ),
        "{after}"
    );
    // In the tool result's own message: no second user message in a row.
    let last = backend.requests()[2].messages.last().unwrap().plain_text();
    assert!(
        last.contains("alpha.txt") && last.contains("(My request was:"),
        "{last}"
    );
    assert!(front.answer().ends_with("It holds alpha.txt."));

    // Only once per turn: a second narration is the answer.
    let backend = FakeBackend::default();
    reply(&backend, "Use the `list_dir` tool.");
    reply(&backend, "Really, use the `list_dir` tool.");
    reply(&backend, "never asked");
    let (_, front) = prompt(&backend, project.path(), "hermes", "Which files are here?").await;
    assert_eq!(backend.requests().len(), 2);
    assert!(front.answer().ends_with("Really, use the `list_dir` tool."));
}

#[tokio::test]
async fn a_reply_that_runs_away_is_cut_short_and_asked_again() {
    let project = tempfile::tempdir().unwrap();
    let backend = FakeBackend::default();
    backend.push(vec![
        text("Let me think.\n"),
        text(&"\n".repeat(5000)),
        text("never shown"),
        finish(FinishReason::Length),
    ]);
    reply(&backend, "Nothing is here yet.");
    let (stop, front) = prompt(&backend, project.path(), "hermes", "what is here?").await;
    assert_eq!(stop, StopReason::EndTurn);
    assert!(!front.answer().contains("never shown"));
    assert!(front.answer().ends_with("Nothing is here yet."));
    // The nudge is in the history; the request after it is the answer digest.
    let asked = &backend.requests()[1];
    assert!(asked.answer_only && asked.messages.len() == 2);
    assert!(asked.messages[1].plain_text().ends_with("what is here?"));
}

#[tokio::test]
async fn hermes_requests_name_their_tools_for_a_backend_that_can_hold_calls_to_them() {
    let project = tempfile::tempdir().unwrap();
    let names = |tools: &[hearth_backend::ToolSpec]| {
        tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>()
    };

    let backend = FakeBackend::default();
    reply(&backend, "Nothing here.");
    prompt(&backend, project.path(), "hermes", "what is here?").await;
    let request = &backend.requests()[0];
    assert!(request.tools.is_empty(), "the tool block is in the prompt");
    let held = names(&request.hermes_tools);
    assert!(held.contains(&"read_file".to_string()), "{held:?}");
    assert!(
        request.hold_bare_calls,
        "calls written without the tags too"
    );
    assert!(
        request.messages[0]
            .plain_text()
            .contains("\"name\": \"read_file\""),
        "the same tools are declared in the prompt"
    );

    let backend = FakeBackend::default();
    reply(&backend, "Nothing here.");
    prompt(&backend, project.path(), "native", "what is here?").await;
    let request = &backend.requests()[0];
    assert!(request.hermes_tools.is_empty() && !request.tools.is_empty());

    let backend = FakeBackend::default();
    reply(&backend, "Nothing here.");
    let off = "assists_off = [\"call_grammar\"]";
    prompt_with(&backend, project.path(), "hermes", off, "what is here?").await;
    assert!(backend.requests()[0].hermes_tools.is_empty());

    let backend = FakeBackend::default();
    reply(&backend, "Nothing here.");
    let off = "assists_off = [\"bare_calls\"]";
    prompt_with(&backend, project.path(), "hermes", off, "what is here?").await;
    let request = &backend.requests()[0];
    assert!(!request.hermes_tools.is_empty() && !request.hold_bare_calls);
}

/// Hostile names in a request to change files: a symlink out of the project and a FIFO are
/// never targets (nothing outside is read, nothing blocks), and the layout does not follow a
/// symlinked directory out of the project.
#[tokio::test]
async fn the_work_check_and_the_layout_stay_inside_the_project_and_never_block() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("far.py"), "FAR = 1\n").unwrap();
    let project = tempfile::tempdir().unwrap();
    let link = |target: &Path, name: &str| {
        std::os::unix::fs::symlink(target, project.path().join(name)).unwrap()
    };
    link(&outside.path().join("far.py"), "link.py");
    link(outside.path(), "away");
    let fifo = std::process::Command::new("mkfifo")
        .arg(project.path().join("pipe.py"))
        .status()
        .unwrap();
    assert!(fifo.success());
    let backend = FakeBackend::default();
    reply(&backend, "```python\nFAR = 2\n```");
    let words = "Fix link.py, pipe.py and ../far.py";
    let run = prompt(&backend, project.path(), "hermes", words);
    let (stop, _) = tokio::time::timeout(std::time::Duration::from_secs(20), run)
        .await
        .expect("a FIFO must not block the turn");
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(backend.requests().len(), 1, "no target inside: no nudge");
    let sent = backend.requests()[0].messages.last().unwrap().plain_text();
    assert!(
        !sent.contains("far.py\n") && !sent.contains("FAR = 1"),
        "{sent}"
    );
}

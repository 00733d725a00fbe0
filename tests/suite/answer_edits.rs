//! The answer's code into the files the request names (the answer_edits assist), driven
//! through the agent core with a scripted model: the whole file again, Python definitions
//! merged by name with the standard modules they use imported, a new file from its block; and,
//! where no block fits or the model only invents calls, each named file asked for whole in a
//! request of its own, its block written where it keeps the rest of the file and parses.

use hearth::agent::StopReason;

use crate::common::fake_backend::FakeBackend;
use crate::common::scripted_turn::{last_message, prompt_with, reply};

const APP: &str =
    "def main():\n    print(\"Welcom to the app\")\n\n\nif __name__ == \"__main__\":\n    main()\n";

/// Runs `words` in a project holding `files`, the model answering `answers` in turn; returns
/// the project, the requests made and the answer the user read.
async fn run(
    files: &[(&str, &str)],
    answers: &[&str],
    words: &str,
    agent: &str,
) -> (tempfile::TempDir, FakeBackend, String) {
    let project = tempfile::tempdir().unwrap();
    for (path, text) in files {
        std::fs::write(project.path().join(path), text).unwrap();
    }
    let backend = FakeBackend::default();
    for answer in answers {
        reply(&backend, answer);
    }
    let (stop, front) = prompt_with(&backend, project.path(), "hermes", agent, words).await;
    assert_eq!(stop, StopReason::EndTurn);
    (project, backend, front.answer())
}

fn read(project: &tempfile::TempDir, path: &str) -> String {
    std::fs::read_to_string(project.path().join(path)).unwrap()
}

#[tokio::test]
async fn the_whole_file_in_the_answer_is_written_to_the_file_the_request_names() {
    let fixed = APP.replace("Welcom", "Welcome").replace("\n\n\n", "\n\n");
    let answer = format!("The typo is fixed:\n\n```python\n{fixed}```\n");
    let (project, backend, shown) = run(
        &[("app.py", APP)],
        &[&answer],
        "Fix the typo in the message that app.py prints.",
        "",
    )
    .await;
    assert_eq!(read(&project, "app.py"), fixed);
    // Written in the answer's round, no nudge and no other request.
    assert_eq!(backend.requests().len(), 1);
    assert!(shown.starts_with("The typo is fixed:"), "{shown}");

    // With the assist off the model is nudged instead, and the file stays as it was.
    let (project, backend, _) = run(
        &[("app.py", APP)],
        &[&answer, "Done."],
        "Fix the typo in the message that app.py prints.",
        "assists_off = [\"answer_edits\"]",
    )
    .await;
    assert_eq!(read(&project, "app.py"), APP);
    assert!(last_message(&backend, 1).starts_with("You have not changed any file yet"));
}

#[tokio::test]
async fn a_python_definition_replaces_its_namesake_and_its_standard_modules_are_imported() {
    let shapes = "def area_square(side):\n    return side * side\n\n\ndef area_circle(r):\n    return 3.14 * r * r\n";
    let (project, _, _) = run(
        &[("shapes.py", shapes)],
        &["```python\ndef area_circle(r):\n    return math.pi * r * r\n```"],
        "In shapes.py, make area_circle use math.pi instead of 3.14.",
        "",
    )
    .await;
    let python = std::process::Command::new("python3")
        .arg("-V")
        .output()
        .is_ok();
    let expected = shapes.replace("3.14 *", "math.pi *");
    let expected = if python {
        format!("import math\n\n\n{expected}")
    } else {
        expected
    };
    assert_eq!(read(&project, "shapes.py"), expected);

    // A new function goes at the end of the one Python file named.
    let (project, _, _) = run(
        &[("mathutils.py", "def add(a, b):\n    return a + b\n")],
        &["", "```python\ndef multiply(a, b):\n    return a * b\n```"],
        "Add a function multiply(a, b) to mathutils.py that returns a * b.",
        "",
    )
    .await;
    assert_eq!(
        read(&project, "mathutils.py"),
        "def add(a, b):\n    return a + b\n\n\ndef multiply(a, b):\n    return a * b\n"
    );
}

#[tokio::test]
async fn a_new_file_gets_the_block_in_its_language() {
    let (project, backend, _) = run(
        &[],
        &["Here it is:\n```python\nprint(\"Hello, world!\")\n```"],
        "Create hello.py that prints Hello, world!",
        "",
    )
    .await;
    assert_eq!(read(&project, "hello.py"), "print(\"Hello, world!\")\n");
    assert_eq!(backend.requests().len(), 1);
}

#[tokio::test]
async fn blocks_that_do_not_fit_are_left_alone_and_the_file_is_asked_for_whole() {
    let settings = "TIMEOUT = 30\nMAX_RETRIES = 3\nLOG_LEVEL = \"info\"\n";
    for (files, answer, words, asked) in [
        // Two of three lines rewritten: not the file with one change.
        (
            vec![("settings.py", settings)],
            "```python\nTIMEOUT = 5\nMAX_RETRIES = 5\nLOG_LEVEL = \"info\"\n```",
            "Change MAX_RETRIES in settings.py to 5.",
            Some("Write the complete new content of settings.py, in one fenced code block."),
        ),
        // The whole file, but with the rest elided.
        (
            vec![("app.py", APP)],
            "```python\ndef main():\n    print(\"Welcome to the app\")\n\n# ... rest unchanged\nif __name__ == \"__main__\":\n    main()\n```",
            "Fix the typo in app.py",
            Some("Write the complete new content of app.py, in one fenced code block."),
        ),
        // A definition and a usage line: where the usage goes is a guess.
        (
            vec![("app.py", APP)],
            "```python\ndef main():\n    print(\"Welcome to the app\")\n\nmain()\n```",
            "Fix the typo in app.py",
            Some("Write the complete new content of app.py, in one fenced code block."),
        ),
        // Another language, and code that does not parse.
        (
            vec![("app.py", APP)],
            "```rust\nfn main() {}\n```",
            "Fix the typo in app.py",
            Some("Write the complete new content of app.py, in one fenced code block."),
        ),
        (
            vec![],
            "```json\n{\"port\": \n```",
            "Create config.json with port 8080",
            Some(
                "Write the complete content of the new file config.json, in one fenced code block.",
            ),
        ),
        // A dotted name in the request is code, not a file to make.
        (
            vec![],
            "```python\nimport math\nprint(math.pi)\n```",
            "Make area_circle use math.pi",
            None,
        ),
    ] {
        let before: Vec<(String, String)> = files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect();
        // The file's answer holds no block: nothing is written from it either.
        let (project, backend, _) = run(&files, &[answer, "Done."], words, "").await;
        for (path, text) in &before {
            assert_eq!(&read(&project, path), text, "{answer}");
        }
        assert!(!project.path().join("config.json").exists());
        assert!(!project.path().join("math.pi").exists());
        let requests = backend.requests();
        match asked {
            Some(ask) => {
                assert_eq!(requests.len(), 2, "{answer}");
                let file_request = &requests[1];
                assert!(file_request.answer_only && file_request.tools.is_empty());
                let last = file_request.messages.last().unwrap().plain_text();
                assert!(last.ends_with(ask), "{last}");
            }
            None => assert_eq!(requests.len(), 1),
        }
    }
}

#[tokio::test]
async fn an_answer_without_code_gets_the_file_asked_for_whole_and_its_block_written() {
    let fixed = APP.replace("Welcom", "Welcome");
    let (project, backend, shown) = run(
        &[("app.py", APP)],
        &["I fixed it.", &format!("```python\n{fixed}```")],
        "Fix the typo in app.py",
        "",
    )
    .await;
    assert_eq!(backend.requests().len(), 2);
    assert_eq!(read(&project, "app.py"), fixed);
    // The request of its own: the file prompt, the file as it is, the words, the ask.
    let request = &backend.requests()[1];
    let system = request.messages[0].plain_text();
    assert!(system.starts_with("You are hearth, a coding agent working in the user's project. The user asks for a change"), "{system}");
    let user = request.messages[1].plain_text();
    assert_eq!(
        user.matches("<context file=\"app.py\">").count(),
        1,
        "{user}"
    );
    assert!(user.contains("Fix the typo in app.py\n\nWrite the complete new content of app.py"));
    assert!(shown.starts_with("I fixed it."), "{shown}");
}

#[tokio::test]
async fn a_round_of_invented_calls_gets_each_named_file_asked_for_in_turn() {
    let files = [
        (
            "calc.py",
            "def calc_sum(numbers):\n    return sum(numbers)\n",
        ),
        (
            "main.py",
            "from calc import calc_sum\n\nprint(calc_sum([1, 2]))\n",
        ),
    ];
    let invented = "<tool_call>\n{\"name\": \"rename_function\", \"arguments\": {\"old_name\": \"calc_sum\", \"new_name\": \"total\"}}\n</tool_call>";
    let (project, backend, _) = run(
        &files,
        &[
            invented,
            // calc.py: the renamed function alone is an addition (the old one may be in use).
            "```python\ndef total(numbers):\n    return sum(numbers)\n```",
            // main.py: the whole file again, with its label wrong.
            "```text\nfrom calc import total\n\nprint(total([1, 2]))\n```",
        ],
        "Rename the function calc_sum to total in calc.py and main.py.",
        "",
    )
    .await;
    let requests = backend.requests();
    assert_eq!(requests.len(), 3);
    for (request, name) in requests[1..].iter().zip(["calc.py", "main.py"]) {
        let last = request.messages.last().unwrap().plain_text();
        assert!(last.ends_with(&format!("new content of {name}, in one fenced code block.")));
    }
    assert_eq!(
        read(&project, "calc.py"),
        "def calc_sum(numbers):\n    return sum(numbers)\n\n\ndef total(numbers):\n    return sum(numbers)\n"
    );
    assert_eq!(
        read(&project, "main.py"),
        "from calc import total\n\nprint(total([1, 2]))\n"
    );
}

#[tokio::test]
async fn an_asked_block_that_drops_the_rest_of_the_file_or_does_not_parse_is_not_written() {
    let cargo = "[package]\nname = \"tally\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nanyhow = \"1\"\n";
    let invented =
        "<tool_call>\n{\"name\": \"Cargo.toml\", \"arguments\": {\"serde\": \"1\"}}\n</tool_call>";
    for answer in [
        "```toml\n[dependencies]\nserde = \"1\"\n```",
        "```toml\n[package]\nname = \"tally\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nanyhow = \"1\"\nserde = \n```",
    ] {
        let (project, backend, _) = run(
            &[("Cargo.toml", cargo)],
            &[invented, answer],
            "Add serde 1 to Cargo.toml",
            "",
        )
        .await;
        assert_eq!(backend.requests().len(), 2);
        assert_eq!(read(&project, "Cargo.toml"), cargo, "{answer}");
    }
    // Labelled as another language but valid TOML keeping the file: written.
    let whole = format!("{cargo}serde = \"1\"\n");
    let (project, _, _) = run(
        &[("Cargo.toml", cargo)],
        &[invented, &format!("```rust\n{whole}```")],
        "Add serde 1 to Cargo.toml",
        "",
    )
    .await;
    assert_eq!(read(&project, "Cargo.toml"), whole);

    // A file too large to be asked for whole gets the nudge instead.
    let large: String = (0..2000).map(|i| format!("X{i} = {i}\n")).collect();
    let (_, backend, _) = run(
        &[("big.py", &large)],
        &["I changed it.", "Done."],
        "Change X5 in big.py to 6",
        "",
    )
    .await;
    let nudge = last_message(&backend, 1);
    assert!(
        nudge.starts_with("You have not changed any file yet"),
        "{nudge}"
    );
}

#[tokio::test]
async fn a_file_that_may_hold_secrets_is_never_asked_for_and_one_not_text_never_written() {
    let invented =
        "<tool_call>\n{\"name\": \"set_env\", \"arguments\": {\"FOO\": \"1\"}}\n</tool_call>";
    let (project, backend, _) = run(
        &[(".env", "TOKEN=hunter2\n")],
        &[invented, "```\nTOKEN=hunter2\nFOO=1\n```"],
        "Add FOO=1 to .env",
        "",
    )
    .await;
    let requests = backend.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        !requests[1].answer_only,
        "the second request is the conversation, not a file ask"
    );
    let sent: String = requests
        .iter()
        .flat_map(|r| &r.messages)
        .map(|m| m.plain_text())
        .collect();
    assert!(!sent.contains("hunter2"), "the secret went to the model");
    // The answer's block is the whole file again: written, as any answer's code, through the
    // policy (the user asked for the change); only hearth's own request never carries it.
    assert_eq!(read(&project, ".env"), "TOKEN=hunter2\nFOO=1\n");

    // A named file that cannot be read as text is no target: no block goes into it.
    let project = tempfile::tempdir().unwrap();
    let png = [0x89u8, b'P', b'N', b'G', 0xff, 0xfe, 0x00, 0x01];
    std::fs::write(project.path().join("logo.png"), png).unwrap();
    let backend = FakeBackend::default();
    reply(&backend, "```\nnot an image\n```");
    prompt_with(
        &backend,
        project.path(),
        "hermes",
        "",
        "Update logo.png to be blue",
    )
    .await;
    assert_eq!(backend.requests().len(), 1);
    assert_eq!(std::fs::read(project.path().join("logo.png")).unwrap(), png);
}

#[tokio::test]
async fn a_file_the_turn_left_broken_is_asked_for_again_with_its_parsers_complaint() {
    // Only where `sh` is a POSIX shell that refuses bash's loop (dash, as on Debian).
    let bashism = "for ((i=1; i<=5; i++)); do echo $i; done\n";
    let mut sh = std::process::Command::new("sh")
        .arg("-n")
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut sh.stdin.take().unwrap(), bashism.as_bytes()).unwrap();
    if sh.wait().unwrap().success() {
        return;
    }
    let write = format!(
        "<tool_call>\n{{\"name\": \"write_file\", \"arguments\": {{\"path\": \"count.sh\", \"content\": {}}}}}\n</tool_call>",
        serde_json::to_string(bashism).unwrap()
    );
    let (project, backend, _) = run(
        &[],
        &[
            &write,
            "Done.",
            "```sh\nfor i in 1 2 3 4 5; do\n  echo $i\ndone\n```",
        ],
        "Create a shell script count.sh that prints the numbers 1 to 5",
        "",
    )
    .await;
    let requests = backend.requests();
    assert_eq!(requests.len(), 3);
    let ask = requests[2].messages.last().unwrap().plain_text();
    assert!(
        ask.contains(
            "Write the complete content of count.sh again: as you wrote it, it is not valid shell:"
        ),
        "{ask}"
    );
    assert!(requests[2].answer_only);
    assert_eq!(
        read(&project, "count.sh"),
        "for i in 1 2 3 4 5; do\n  echo $i\ndone\n"
    );
}

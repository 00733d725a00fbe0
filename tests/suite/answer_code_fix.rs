//! The answer's code checked and fixed (the check_answer_code assist), driven through the agent
//! core with a scripted model: rustc's own suggestions made, the code asked for afresh in a
//! request of its own and then with rustc's complaint, a fix shown only once it passes, an
//! honest note when none does; code that would make the compiler read files is never checked.

use hearth::agent::StopReason;

use crate::common::fake_backend::FakeBackend;
use crate::common::scripted_turn::{prompt_with, reply};

/// Whether `rustc` can be run here (the Rust cases need it).
fn have_rustc() -> bool {
    std::process::Command::new("rustc")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success())
}

/// Runs `words` in an empty project, the model answering `answers` in turn; returns the
/// requests made and the answer the user read.
async fn run(answers: &[&str], words: &str, agent: &str) -> (FakeBackend, String) {
    let project = tempfile::tempdir().unwrap();
    let backend = FakeBackend::default();
    for answer in answers {
        reply(&backend, answer);
    }
    let (stop, front) = prompt_with(&backend, project.path(), "hermes", agent, words).await;
    assert_eq!(stop, StopReason::EndTurn);
    (backend, front.answer())
}

/// A FizzBuzz with no `main` whose function returns `trim()`'s `&str` as a `String`: what
/// Qwen2.5-Coder 0.5B answers to "write fizzbuzz in rust".
const NO_MAIN: &str = "```rust\nfn fizzbuzz(i: u32) -> String {\n    let s = format!(\"{i} \");\n    s.trim()\n}\n```";

#[tokio::test]
async fn a_fix_with_main_is_asked_for_and_rustcs_own_suggestion_finishes_it() {
    if !have_rustc() {
        return;
    }
    let with_main = "```rust\nfn fizzbuzz(i: u32) -> String {\n    let s = format!(\"{i} \");\n    s.trim()\n}\nfn main() {\n    println!(\"{}\", fizzbuzz(1));\n}\n```";
    let (backend, shown) = run(&[NO_MAIN, with_main], "write fizzbuzz in rust", "").await;
    let requests = backend.requests();
    assert_eq!(requests.len(), 2);
    // The fix is asked for on its own, afresh: no tools, the user's words, what is wanted.
    let ask = requests[1].messages.last().unwrap().plain_text();
    assert!(requests[1].answer_only && requests[1].tools.is_empty());
    assert_eq!(
        ask,
        "write fizzbuzz in rust\n\nWrite the whole Rust program, with its main function, in one fenced code block."
    );
    // The user reads the first answer, then what was wrong, then the fix that compiles, with
    // rustc's `.to_string()` made.
    assert!(shown.starts_with(NO_MAIN), "{shown}");
    assert!(
        shown.contains(
            "The Rust code above does not compile (error[E0601]: `main` function not found in crate `answer`). The fixed code, which compiles:"
        ),
        "{shown}"
    );
    let fixed = shown.rsplit_once(hearth::agent::FIXED_CODE).unwrap().1;
    assert!(
        fixed.contains("s.trim().to_string()\n}\nfn main() {"),
        "{fixed}"
    );
}

#[tokio::test]
async fn rustcs_suggestions_alone_need_no_request_and_a_fix_that_never_compiles_is_owned_up_to() {
    if !have_rustc() {
        return;
    }
    let answer =
        "```rust\nfn main() {\n    let s: String = \" a \".trim();\n    println!(\"{s}\");\n}\n```";
    let (backend, shown) = run(&[answer], "write a program that trims a string in rust", "").await;
    assert_eq!(backend.requests().len(), 1);
    assert!(
        shown.contains("let s: String = \" a \".trim().to_string();"),
        "{shown}"
    );

    // Two fixes that still do not compile: a note, and nothing shown as fixed.
    let (backend, shown) = run(
        &[NO_MAIN, NO_MAIN, "```rust\nfn main() { undefined() }\n```"],
        "write fizzbuzz in rust",
        "",
    )
    .await;
    assert_eq!(backend.requests().len(), 3);
    // The second fix is asked with the code as it stands (rustc's suggestion made) and what
    // rustc still says about it.
    let third = backend.requests()[2].messages.last().unwrap().plain_text();
    assert!(third.starts_with("write fizzbuzz in rust"), "{third}");
    assert!(third.contains("s.trim().to_string()\n}\n```"), "{third}");
    assert!(third.contains("rustc says it does not compile:"), "{third}");
    assert!(third.contains("E0601"), "{third}");
    assert!(
        third.contains("Write the whole corrected program, with its main function"),
        "{third}"
    );
    assert!(!shown.contains(hearth::agent::FIXED_CODE), "{shown}");
    assert!(
        shown.ends_with(
            "Note: the Rust code above does not compile: error[E0601]: `main` function not found in crate `answer`"
        ),
        "{shown}"
    );
}

#[tokio::test]
async fn python_that_does_not_parse_is_fixed_and_the_assist_can_be_turned_off() {
    let broken = "```python\ndef add(a, b)\n    return a + b\n```";
    let fixed = "```python\ndef add(a, b):\n    return a + b\n```";
    let words = "Write a Python function add(a, b).";
    let (backend, shown) = run(&[broken, fixed], words, "").await;
    if backend.requests().len() == 1 {
        // No python3 here: nothing is checked.
        return;
    }
    let ask = backend.requests()[1].messages.last().unwrap().plain_text();
    assert!(
        ask.ends_with("Write the whole Python code, in one fenced code block."),
        "{ask}"
    );
    assert!(
        shown.ends_with(
            "The fixed code, which parses:\n\n```python\ndef add(a, b):\n    return a + b\n```"
        ),
        "{shown}"
    );

    let (backend, shown) = run(&[broken], words, "assists_off = [\"check_answer_code\"]").await;
    assert_eq!(backend.requests().len(), 1);
    assert_eq!(shown, broken);
}

#[tokio::test]
async fn code_that_would_read_files_and_answers_beside_writes_are_not_checked() {
    let reads = "```rust\nfn main() { let k: u8 = include_str!(\"/etc/passwd\"); }\n```";
    let (backend, shown) = run(&[reads], "write it in rust", "").await;
    assert_eq!(backend.requests().len(), 1);
    assert_eq!(shown, reads);

    // The code went into a file: the write check's business, not this one's.
    let write = "<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"add.py\", \"content\": \"def add(a, b):\\n    return a + b\\n\"}}\n</tool_call>";
    let (backend, _) = run(
        &[write, "Wrote add.py:\n```python\ndef add(a, b)\n```"],
        "Create add.py with a function add(a, b).",
        "",
    )
    .await;
    assert_eq!(backend.requests().len(), 2);
}

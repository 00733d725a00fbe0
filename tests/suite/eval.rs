//! The eval harness judged against a scripted model: every task's own solution passes, and
//! wrong work — the task's own wrong answers, an invented tool shown as the answer, a refusal,
//! a blank answer — fails, so no check passes on work that was not done.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hearth::agent::AgentCore;
use hearth::eval::{SuiteTask, TaskOptions, TaskResult, builtin_suite, run_task};
use hearth_backend::FinishReason;

use crate::common::fake_backend::{FakeBackend, agent_core, finish, text};

/// Answers every task must fail.
const GENERIC_WRONG: [&str; 3] = [
    "```json\n{\n  \"name\": \"solve_task\",\n  \"arguments\": {\"task\": \"it\"}\n}\n```",
    "I'm sorry, I cannot help with that.",
    "\n\n\n",
];

fn core(backend: &FakeBackend, data: &Path) -> Arc<AgentCore> {
    Arc::new(agent_core(backend, data, "hermes"))
}

/// `{{command}}` in a scripted answer becomes what the command prints in the task's project
/// (a checksum, a version), as a model that ran it would have learnt.
fn expand(round: &str, task: &SuiteTask) -> String {
    let Some(start) = round.find("{{") else {
        return round.to_string();
    };
    let end = round[start..].find("}}").unwrap() + start;
    let dir = tempfile::tempdir().unwrap();
    for (path, body) in &task.task.files {
        let target = dir.path().join(path);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(target, body).unwrap();
    }
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(&round[start + 2..end])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout).trim().to_string();
    format!("{}{printed}{}", &round[..start], &round[end + 2..])
}

async fn play(task: &SuiteTask, rounds: &[String]) -> TaskResult {
    let backend = FakeBackend::with_models(&["m"]);
    for round in rounds {
        backend.push(vec![text(&expand(round, task)), finish(FinishReason::Stop)]);
    }
    let data = tempfile::tempdir().unwrap();
    let options = TaskOptions {
        model: None,
        timeout: Duration::from_secs(60),
        keep: false,
        projects: data.path().join("eval"),
    };
    run_task(core(&backend, data.path()), task.clone(), options).await
}

fn explain(result: &TaskResult) -> String {
    let failed: Vec<String> = result
        .verdicts
        .iter()
        .filter(|v| !v.passed)
        .map(|v| format!("{}: {}", v.check, v.why.clone().unwrap_or_default()))
        .collect();
    format!("{} {:?} {:?}", result.id, failed, result.outcome.error)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_task_passes_its_solution_and_fails_wrong_work() {
    let suite = builtin_suite().unwrap();
    let mut problems = Vec::new();
    for task in &suite {
        let right = play(task, &task.task.solution).await;
        if !right.passed {
            problems.push(format!("solution fails: {}", explain(&right)));
        }
        let mut wrongs: Vec<Vec<String>> = task.task.wrong.clone();
        wrongs.extend(GENERIC_WRONG.iter().map(|w| vec![w.to_string()]));
        for wrong in &wrongs {
            let result = play(task, wrong).await;
            if result.passed {
                problems.push(format!("{} passes wrong work: {wrong:?}", task.task.id));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[tokio::test]
async fn a_task_reports_rounds_calls_and_an_unfinished_turn() {
    let suite = builtin_suite().unwrap();
    let task = suite.iter().find(|t| t.task.id == "server-port").unwrap();
    let result = play(task, &task.task.solution).await;
    assert!(result.passed, "{}", explain(&result));
    assert_eq!(result.outcome.rounds, 2);
    assert_eq!(result.outcome.calls.len(), 1);
    assert_eq!(result.outcome.calls[0].name, "read_file");
    assert!(result.outcome.calls[0].succeeded);
    // The scripted model runs out after the call: the turn fails, and the task with it.
    let cut = play(task, &task.task.solution[..1]).await;
    assert!(!cut.passed);
    assert!(cut.outcome.error.is_some());
}

#[tokio::test]
async fn code_written_to_a_file_instead_of_the_reply_is_judged_too() {
    let suite = builtin_suite().unwrap();
    let task = suite
        .iter()
        .find(|t| t.task.id == "is-prime-python")
        .unwrap();
    let write = |body: &str| {
        format!(
            "<tool_call>\n{{\"name\": \"write_file\", \"arguments\": {{\"path\": \"prime.py\", \"content\": {}}}}}\n</tool_call>",
            serde_json::to_string(body).unwrap()
        )
    };
    let right = write("def is_prime(n):\n    return n > 1 and all(n % d for d in range(2, n))\n");
    let result = play(task, &[right, "Wrote prime.py.".into()]).await;
    assert!(result.passed, "{}", explain(&result));
    let wrong = write("def is_prime(n):\n    return True\n");
    let result = play(task, &[wrong, "Wrote prime.py.".into()]).await;
    assert!(!result.passed);
}

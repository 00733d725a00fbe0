//! Runs one task: a fresh project in a temporary directory, one prompt through the agent core
//! with everything permitted, then the judge.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hearth_backend::ContentPart;
use hearth_conversation::{HistoryEntry, ModelRef};
use serde::Serialize;

use super::judge::{Verdict, judge};
use super::outcome::{EvalFront, Outcome};
use super::suite::SuiteTask;
use crate::agent::AgentCore;
use crate::host::LocalClientOps;

/// How every task of a run is run.
#[derive(Debug, Clone)]
pub struct TaskOptions {
    pub model: Option<ModelRef>,
    /// A task's turn is cancelled after this long (and judged on what it did).
    pub timeout: Duration,
    /// Keep each project directory (its path is in the result) instead of deleting it.
    pub keep: bool,
    /// Where projects are made: a private directory at a fixed path (see [`set_up`]).
    pub projects: PathBuf,
}

/// One task's result.
#[derive(Debug, Clone, Serialize)]
pub struct TaskResult {
    pub id: String,
    pub kind: &'static str,
    pub passed: bool,
    pub verdicts: Vec<Verdict>,
    #[serde(flatten)]
    pub outcome: Outcome,
    /// Where the project was kept (`--keep`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<PathBuf>,
}

/// Runs `task` and judges it. Never fails: a project that cannot be set up is a failed task
/// whose verdict says why.
pub async fn run_task(core: Arc<AgentCore>, task: SuiteTask, options: TaskOptions) -> TaskResult {
    let started = Instant::now();
    let project = match set_up(&options.projects, &task) {
        Ok(dir) => dir,
        Err(err) => {
            let outcome = Outcome {
                error: Some(format!("cannot set up the project: {err}")),
                ..Outcome::default()
            };
            return finish(&task, outcome, Vec::new(), None);
        }
    };
    let dir = project
        .path()
        .canonicalize()
        .unwrap_or_else(|_| project.path().to_path_buf());
    let mut outcome = run_prompt(&core, &task, &dir, &options).await;
    outcome.setup = task.task.files.clone();
    outcome.seconds = started.elapsed().as_secs_f64();
    let verdicts = judge(&task.task, &dir, &outcome).await;
    let kept = options.keep.then(|| {
        let kept = keep(project, &options.projects, &task.task.id);
        write_transcript(&kept, &outcome.history);
        kept
    });
    finish(&task, outcome, verdicts, kept)
}

/// Moves a finished project out of the `project-N` slots, to `kept/<task id>` (replacing an
/// earlier run's), so that the next run's tasks get the same paths, and the same prompts, as
/// this one's. Where the move fails, the project stays where it is.
fn keep(project: tempfile::TempDir, parent: &Path, id: &str) -> PathBuf {
    let made = project.keep();
    let kept = parent.join("kept").join(id);
    let moved = std::fs::create_dir_all(parent.join("kept")).is_ok()
        && match std::fs::remove_dir_all(&kept) {
            Ok(()) => true,
            Err(e) => e.kind() == std::io::ErrorKind::NotFound,
        }
        && std::fs::rename(&made, &kept).is_ok();
    if moved { kept } else { made }
}

/// Writes the turn's history beside a kept project, one entry per JSON line in
/// `<project>.history.jsonl`: what the model was shown and what it wrote, round by round, to
/// read why a task failed. Outside the project, so a later look at its files sees only the
/// task's. Best effort: a kept project without its transcript is still worth keeping.
fn write_transcript(project: &Path, history: &[HistoryEntry]) {
    let mut text = String::new();
    for entry in history {
        if let Ok(line) = serde_json::to_string(entry) {
            text.push_str(&line);
            text.push('\n');
        }
    }
    let mut path = project.as_os_str().to_owned();
    path.push(".history.jsonl");
    if let Err(err) = std::fs::write(&path, text) {
        tracing::warn!(
            "cannot write the transcript {}: {err}",
            Path::new(&path).display()
        );
    }
}

fn finish(
    task: &SuiteTask,
    outcome: Outcome,
    verdicts: Vec<Verdict>,
    project: Option<PathBuf>,
) -> TaskResult {
    let passed = !verdicts.is_empty() && verdicts.iter().all(|v| v.passed);
    TaskResult {
        id: task.task.id.clone(),
        kind: task.kind,
        passed,
        verdicts,
        outcome,
        project,
    }
}

/// Most projects one run holds at once (`--jobs` beyond this share random names).
const PROJECT_SLOTS: usize = 64;

/// The task's files in a new project directory under `parent`: `project-1`, or the next free
/// `project-N` while other tasks hold the first. The path is in the system prompt, so a
/// random name alone changes what the model samples; a fixed one makes the same model on the
/// same machine score the same, run after run. `parent` is made private to the user (it is under
/// the data directory), so no one else can take a predictable name first.
fn set_up(parent: &Path, task: &SuiteTask) -> std::io::Result<tempfile::TempDir> {
    crate::store::private_dir_all(parent)?;
    let fixed = (1..=PROJECT_SLOTS).find_map(|n| {
        tempfile::Builder::new()
            .prefix(&format!("project-{n}"))
            .rand_bytes(0)
            .tempdir_in(parent)
            .ok()
    });
    let dir = match fixed {
        Some(dir) => dir,
        None => tempfile::Builder::new()
            .prefix("project-")
            .tempdir_in(parent)?,
    };
    for (path, text) in &task.task.files {
        let target = dir.path().join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(target, text)?;
    }
    Ok(dir)
}

async fn run_prompt(
    core: &AgentCore,
    task: &SuiteTask,
    dir: &Path,
    options: &TaskOptions,
) -> Outcome {
    let settings = core.default_settings(None, options.model.clone(), &[]);
    let session = core.new_session(dir.to_path_buf(), settings);
    let front = Arc::new(EvalFront::default());
    let client = LocalClientOps::new(front.clone());
    let ticket = session.begin_turn();
    let prompt = vec![ContentPart::text(task.task.prompt.clone())];
    let run = core.run_prompt(&session, &ticket, prompt, &client);
    tokio::pin!(run);
    let mut timed_out = false;
    let result = tokio::select! {
        result = &mut run => result,
        () = tokio::time::sleep(options.timeout) => {
            timed_out = true;
            ticket.cancel.cancel();
            run.await
        }
    };
    let mut outcome = Outcome::default();
    front.fill(&mut outcome);
    outcome.read_history(session.history().await.clone());
    match result {
        Ok(_) if timed_out => {
            outcome.error = Some(format!("timed out after {}s", options.timeout.as_secs()));
        }
        Ok(reason) => outcome.stop = Some(reason.id()),
        Err(err) => outcome.error = Some(err.to_string()),
    }
    outcome
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::eval::suite::builtin_suite;

    #[test]
    fn projects_get_the_same_private_path_each_run_and_distinct_ones_at_once() {
        let data = tempfile::tempdir().unwrap();
        let parent = data.path().join("eval");
        let suite = builtin_suite().unwrap();
        let task = suite.iter().find(|t| !t.task.files.is_empty()).unwrap();

        let first = set_up(&parent, task).unwrap();
        let second = set_up(&parent, task).unwrap();
        assert_eq!(first.path(), parent.join("project-1"));
        assert_eq!(second.path(), parent.join("project-2"), "held by the first");
        let (path, text) = task.task.files.iter().next().unwrap();
        assert_eq!(
            &std::fs::read_to_string(first.path().join(path)).unwrap(),
            text
        );
        let mode = std::fs::metadata(&parent).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);

        // A kept project leaves its slot free for the next run.
        let kept = keep(second, &parent, &task.task.id);
        assert_eq!(kept, parent.join("kept").join(&task.task.id));
        assert!(kept.join(path).exists() && !parent.join("project-2").exists());
        let again = set_up(&parent, task).unwrap();
        assert_eq!(again.path(), parent.join("project-2"));
        assert_eq!(
            keep(again, &parent, &task.task.id),
            kept,
            "the earlier one replaced"
        );

        drop(first);
        assert!(!parent.join("project-1").exists(), "removed with its task");
        let again = set_up(&parent, task).unwrap();
        assert_eq!(
            again.path(),
            parent.join("project-1"),
            "the next run's path"
        );
    }
}

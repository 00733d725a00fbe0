//! `hearth eval`: a built-in suite of small agent tasks, each run in a fresh temporary project
//! against any configured model and judged by checks on the files, the answer and the calls.
//! Users run it to choose a model, a tool format or a server; we run it to measure what makes
//! small models finish tasks.

mod args;
mod code;
mod judge;
mod outcome;
mod report;
mod runner;
mod suite;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;

pub use args::{EvalArgs, EvalOutput};
pub use judge::Verdict;
pub use outcome::Outcome;
pub use report::RunReport;
pub use runner::{TaskOptions, TaskResult, run_task};
pub use suite::{Check, SuiteError, SuiteTask, Task, builtin_suite, select};

use crate::agent::AgentCore;
use crate::batch::BatchProgress;

/// Why `hearth eval` could not run at all (a task that fails is a result, not an error).
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error(transparent)]
    Suite(#[from] SuiteError),
    #[error("model `{0}`: no endpoint is configured")]
    UnknownModel(String),
    #[error("no model: configure an endpoint, or let the built-in engine run (no [[endpoints]])")]
    NoModel,
}

/// Runs `hearth eval`: prints each task as it finishes (text) or the whole run (JSON). Each
/// task's project is made under `projects`.
pub async fn run(
    core: Arc<AgentCore>,
    args: EvalArgs,
    projects: PathBuf,
) -> Result<RunReport, EvalError> {
    let tasks = select(builtin_suite()?, &args.tasks)?;
    if args.list {
        for t in &tasks {
            println!("{:<8} {:<26} {}", t.kind, t.task.id, t.task.prompt);
        }
        return Ok(RunReport::new(String::new(), Vec::new(), &[], 0.0));
    }
    let model = match &args.model {
        Some(id) => Some(
            core.catalog
                .parse_value_id(id)
                .ok_or_else(|| EvalError::UnknownModel(id.clone()))?,
        ),
        None => core.default_settings(None, None, &[]).model,
    };
    let model = model.ok_or(EvalError::NoModel)?;
    let mut model_name = core.catalog.value_id(&model);
    let off = core.config.agent.assists.off_ids();
    if !off.is_empty() {
        model_name.push_str(&format!(" without {}", off.join(", ")));
    }
    if let Some(t) = args.temperature {
        model_name.push_str(&format!(" at temperature {t}"));
    }
    let options = TaskOptions {
        model: Some(model),
        timeout: Duration::from_secs(args.timeout),
        keep: args.keep,
        projects,
    };
    let order: Vec<String> = tasks.iter().map(|t| t.task.id.clone()).collect();
    let started = Instant::now();
    let mut progress = BatchProgress::new(tasks.len() as u64, true, "tasks");
    let mut running = futures::stream::iter(
        tasks
            .into_iter()
            .map(|task| run_task(core.clone(), task, options.clone())),
    )
    .buffer_unordered(usize::from(args.jobs));
    let mut results = Vec::new();
    while let Some(result) = running.next().await {
        // Text runs print each task on stdout; JSON runs keep stdout for the document and
        // show the same lines on stderr as they come.
        let line = report::task_line(&result);
        match args.output {
            EvalOutput::Text => progress.suspend(|| println!("{line}")),
            EvalOutput::Json => progress.suspend(|| eprintln!("{line}")),
        }
        progress.finished(result.passed);
        results.push(result);
    }
    progress.done();
    let report = RunReport::new(model_name, results, &order, started.elapsed().as_secs_f64());
    match args.output {
        EvalOutput::Text => println!("{}", report.summary()),
        EvalOutput::Json => println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        ),
    }
    Ok(report)
}

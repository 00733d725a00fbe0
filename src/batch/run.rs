//! Runs the prompts of `hearth run`, concurrently up to `--jobs`, and prints their results.

use crate::text_safety::visible_controls;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use hearth_backend::ContentPart;
use tokio_util::sync::CancellationToken;

use super::args::{OutputFormat, RunArgs};
use super::client::{BatchFront, Live, Permits, Stdout};
use super::exit::RunExit;
use super::jobs::{Job, job_cwd, parse_batch};
use super::progress::BatchProgress;
use super::report::PromptReport;
use crate::agent::{AgentCore, Session, StopReason};
use crate::host::LocalClientOps;
use crate::store::validate_session_id;

/// Everything one run shares.
struct RunContext {
    core: Arc<AgentCore>,
    args: RunArgs,
    stdout: Arc<Stdout>,
    interrupt: CancellationToken,
    cwd: std::path::PathBuf,
}

/// Runs `hearth run`.
pub async fn run(core: Arc<AgentCore>, args: RunArgs) -> RunExit {
    let cwd = match args.cwd.clone().map_or_else(std::env::current_dir, Ok) {
        Ok(dir) => dir,
        Err(err) => {
            eprintln!("hearth run: cannot determine the working directory: {err}");
            return RunExit::Usage;
        }
    };
    let (jobs, mut bad) = match read_jobs(&args) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("hearth run: {message}");
            return RunExit::Usage;
        }
    };
    let interrupt = CancellationToken::new();
    let watcher = interrupt.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            watcher.cancel();
        }
    });
    let ctx = Arc::new(RunContext {
        core,
        args,
        stdout: Arc::new(Stdout::default()),
        interrupt,
        cwd,
    });
    let mut outcomes = Vec::new();
    for line in bad.drain(..) {
        let report = PromptReport {
            id: format!("line {}", line.line),
            error: Some(format!("bad batch line: {}", line.problem)),
            ..PromptReport::default()
        };
        print_report(&ctx, &report);
        outcomes.push(RunExit::Usage);
    }
    let concurrency = usize::from(ctx.args.jobs);
    let mut progress = BatchProgress::new(jobs.len() as u64, ctx.args.batch.is_some(), "prompts");
    let mut results = futures::stream::iter(jobs.into_iter().map(|job| run_job(ctx.clone(), job)))
        .buffer_unordered(concurrency);
    while let Some((report, exit)) = results.next().await {
        progress.suspend(|| print_report(&ctx, &report));
        progress.finished(exit == RunExit::Ok);
        outcomes.push(exit);
    }
    progress.done();
    if ctx.interrupt.is_cancelled() {
        return RunExit::Interrupted;
    }
    RunExit::combine(outcomes)
}

fn read_jobs(args: &RunArgs) -> Result<(Vec<Job>, Vec<super::jobs::BadLine>), String> {
    let single = |prompt: String| Job {
        id: "prompt".into(),
        prompt,
        cwd: None,
        model: None,
        mode: None,
    };
    if let Some(path) = &args.batch {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read batch file {}: {e}", path.display()))?;
        let (jobs, bad) = parse_batch(&text);
        if jobs.is_empty() && bad.is_empty() {
            return Err(format!("batch file {} has no prompts", path.display()));
        }
        return Ok((jobs, bad));
    }
    let prompt = match &args.prompt {
        Some(p) => p.clone(),
        None => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| format!("cannot read the prompt from stdin: {e}"))?;
            text
        }
    };
    if prompt.trim().is_empty() {
        return Err("no prompt: pass -p TEXT, --batch FILE, or a prompt on stdin".into());
    }
    Ok((vec![single(prompt)], Vec::new()))
}

async fn run_job(ctx: Arc<RunContext>, job: Job) -> (PromptReport, RunExit) {
    let session = match open_session(&ctx, &job) {
        Ok(session) => Arc::new(session),
        Err(message) => {
            let report = PromptReport {
                id: job.id.clone(),
                error: Some(message),
                ..PromptReport::default()
            };
            return (report, RunExit::Usage);
        }
    };
    let live = match ctx.args.output {
        OutputFormat::StreamJson => Live::Json,
        OutputFormat::Text if ctx.args.jobs == 1 && ctx.args.batch.is_none() => Live::Text,
        _ => Live::Quiet,
    };
    let mode = session.settings().mode;
    let permits = Permits {
        writes: ctx.args.allow_writes || mode == hearth_conversation::Mode::Bypass,
        commands: ctx.args.allow_commands || mode == hearth_conversation::Mode::Bypass,
    };
    let front = Arc::new(BatchFront::new(
        job.id.clone(),
        permits,
        live,
        ctx.stdout.clone(),
    ));
    let client = LocalClientOps::new(front.clone());
    let ticket = session.begin_turn();
    let interrupt = ctx.interrupt.clone();
    let cancel = ticket.cancel.clone();
    let interrupt_watch = tokio::spawn(async move {
        interrupt.cancelled().await;
        cancel.cancel();
    });
    let prompt = vec![ContentPart::text(job.prompt.clone())];
    let run = ctx.core.run_prompt(&session, &ticket, prompt, &client);
    tokio::pin!(run);
    let mut timed_out = false;
    let outcome = match ctx.args.timeout {
        Some(secs) => tokio::select! {
            outcome = &mut run => outcome,
            () = tokio::time::sleep(Duration::from_secs(secs)) => {
                timed_out = true;
                ticket.cancel.cancel();
                run.await
            }
        },
        None => run.await,
    };
    interrupt_watch.abort();
    if live == Live::Text {
        ctx.stdout.text("\n");
    }
    let mut report = front.take_report();
    report.session_id = session.id.to_string();
    let exit = match outcome {
        Ok(_) if timed_out => {
            report.error = Some(format!(
                "timed out after {}s",
                ctx.args.timeout.unwrap_or_default()
            ));
            RunExit::Timeout
        }
        Ok(StopReason::Cancelled) if ctx.interrupt.is_cancelled() => {
            report.stop_reason = Some(StopReason::Cancelled.id());
            RunExit::Interrupted
        }
        Ok(reason) => {
            report.stop_reason = Some(reason.id());
            RunExit::Ok
        }
        Err(err) => {
            report.error = Some(err.to_string());
            RunExit::of_error(&err)
        }
    };
    (report, exit)
}

/// The stored session `--continue` / `--resume` names, if any.
fn stored_session(ctx: &RunContext, cwd: &Path) -> Result<Option<Session>, String> {
    let id = match (&ctx.args.resume, ctx.args.continue_last) {
        (Some(raw), _) => validate_session_id(raw).map_err(|e| e.to_string())?,
        (None, true) => {
            let store = ctx
                .core
                .store
                .as_ref()
                .ok_or("sessions are not saved here (no data directory)")?;
            let page = store.list(Some(cwd), None, 1).map_err(|e| e.to_string())?;
            match page.sessions.into_iter().next() {
                Some(s) => s.id,
                None => return Err(format!("no saved session in {}", cwd.display())),
            }
        }
        (None, false) => return Ok(None),
    };
    let (session, _) = ctx.core.restore_session(&id).map_err(|e| e.to_string())?;
    Ok(Some(session))
}

fn open_session(ctx: &RunContext, job: &Job) -> Result<Session, String> {
    if let Some(session) = stored_session(ctx, &canonical(&job_cwd(job, &ctx.cwd)))? {
        if let Some(mode) = job.mode.or(ctx.args.mode) {
            session.update_settings(|s| s.mode = mode);
        }
        if let Some(id) = job.model.as_deref().or(ctx.args.model.as_deref()) {
            let model = ctx
                .core
                .catalog
                .parse_value_id(id)
                .ok_or_else(|| format!("model `{id}`: no endpoint is configured"))?;
            session.update_settings(|s| s.model = Some(model));
        }
        return Ok(session);
    }
    let cwd = job_cwd(job, &ctx.cwd);
    if !cwd.is_dir() {
        return Err(format!(
            "working directory {} does not exist",
            cwd.display()
        ));
    }
    let catalog = &ctx.core.catalog;
    let wanted = job.model.as_deref().or(ctx.args.model.as_deref());
    let model = match wanted {
        Some(id) => Some(
            catalog
                .parse_value_id(id)
                .ok_or_else(|| format!("model `{id}`: no endpoint is configured"))?,
        ),
        None => None,
    };
    let settings = ctx
        .core
        .default_settings(job.mode.or(ctx.args.mode), model, &[]);
    Ok(ctx.core.new_session(canonical(&cwd), settings))
}

fn canonical(dir: &Path) -> std::path::PathBuf {
    dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf())
}

fn print_report(ctx: &RunContext, report: &PromptReport) {
    match ctx.args.output {
        OutputFormat::Json => ctx
            .stdout
            .line(&serde_json::to_string(report).unwrap_or_default()),
        OutputFormat::StreamJson => {
            let mut value = serde_json::to_value(report).unwrap_or_default();
            if let Some(object) = value.as_object_mut() {
                object.insert("type".into(), "result".into());
            }
            ctx.stdout.line(&value.to_string());
        }
        OutputFormat::Text => print_text(ctx, report),
    }
}

fn print_text(ctx: &RunContext, report: &PromptReport) {
    let live = ctx.args.jobs == 1 && ctx.args.batch.is_none();
    if !live {
        ctx.stdout
            .line(&format!("### {}", visible_controls(&report.id)));
        ctx.stdout.line(&visible_controls(report.text.trim_end()));
    }
    for denial in &report.denied {
        if !live {
            eprintln!("[{}] denied: {}", report.id, visible_controls(denial));
        }
    }
    if let Some(err) = &report.error {
        let err = visible_controls(err);
        eprintln!("hearth run: {}: {err}", report.id);
    }
}

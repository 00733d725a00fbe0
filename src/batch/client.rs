//! The headless front end: no one to ask (so the mode and the --allow flags decide), events
//! recorded for the report and optionally printed. Files and commands run on this machine
//! through `LocalClientOps`.

use crate::sync::lock;
use crate::text_safety::visible_controls;
use std::io::Write;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use hearth_conversation::{AgentEvent, PermissionAnswer, Reach, ToolCard, ToolKind};
use serde_json::json;

use super::report::{PromptReport, ToolCallReport, UsageReport};
use crate::host::LocalFrontEnd;

/// What headless runs may do without asking.
#[derive(Debug, Clone, Copy, Default)]
pub struct Permits {
    pub writes: bool,
    pub commands: bool,
}

/// How events are shown while the prompt runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Live {
    /// Nothing until the end.
    Quiet,
    /// Answer text to stdout as it streams, tool cards to stderr.
    Text,
    /// Every event as a JSON line on stdout.
    Json,
}

/// One whole line at a time on stdout, whichever prompt writes it.
#[derive(Default)]
pub struct Stdout {
    lock: Mutex<()>,
}

impl Stdout {
    pub fn line(&self, line: &str) {
        let _guard = lock(&self.lock);
        let mut out = std::io::stdout().lock();
        // A closed stdout (e.g. `| head`) must not kill the run.
        let _ = writeln!(out, "{line}").and_then(|()| out.flush());
    }

    pub fn text(&self, text: &str) {
        let _guard = lock(&self.lock);
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    }
}

pub struct BatchFront {
    job_id: String,
    permits: Permits,
    live: Live,
    stdout: Arc<Stdout>,
    report: Mutex<PromptReport>,
}

impl BatchFront {
    pub fn new(job_id: String, permits: Permits, live: Live, stdout: Arc<Stdout>) -> Self {
        let report = PromptReport {
            id: job_id.clone(),
            ..PromptReport::default()
        };
        Self {
            job_id,
            permits,
            live,
            stdout,
            report: Mutex::new(report),
        }
    }

    pub fn take_report(&self) -> PromptReport {
        std::mem::take(&mut *lock(&self.report))
    }

    fn record(&self, event: &AgentEvent) {
        let mut report = lock(&self.report);
        match event {
            AgentEvent::AgentText { text } => report.text.push_str(text),
            AgentEvent::AgentThought { text } => report.reasoning.push_str(text),
            AgentEvent::ToolCallStarted { card } => report.tool_calls.push(ToolCallReport {
                id: card.id.to_string(),
                title: card.title.clone(),
                kind: card.kind,
                status: card.status,
                input: card.raw_input.clone(),
            }),
            AgentEvent::ToolCallUpdated { id, update } => {
                if let Some(call) = report.tool_calls.iter_mut().find(|c| c.id == id.as_str()) {
                    if let Some(status) = update.status {
                        call.status = status;
                    }
                    if let Some(title) = &update.title {
                        call.title.clone_from(title);
                    }
                }
            }
            AgentEvent::Usage { used, size } => {
                report.usage = Some(UsageReport {
                    used: *used,
                    size: *size,
                })
            }
            _ => {}
        }
    }

    fn show(&self, event: &AgentEvent) {
        match self.live {
            Live::Quiet => {}
            Live::Json => self
                .stdout
                .line(&json!({ "id": self.job_id, "event": event }).to_string()),
            Live::Text => match event {
                AgentEvent::AgentText { text } => self.stdout.text(&visible_controls(text)),
                AgentEvent::ToolCallStarted { card } => {
                    eprintln!("· {}", visible_controls(&card.title));
                }
                AgentEvent::Notice { text } => eprintln!("[hearth] {}", visible_controls(text)),
                _ => {}
            },
        }
    }
}

#[async_trait]
impl LocalFrontEnd for BatchFront {
    /// Nobody can answer: allow what the flags permit, refuse the rest and report it.
    async fn request_permission(&self, card: &ToolCard, reach: Reach) -> PermissionAnswer {
        let (allowed, flag) = match card.kind {
            ToolKind::Execute => (self.permits.commands, "--allow-commands"),
            _ => (self.permits.writes, "--allow-writes"),
        };
        // The flags cover the project (its roots) only; outside it, only bypass mode writes
        // or runs headless, as nobody is there to ask.
        let denial = match reach {
            Reach::WithinRoots if allowed => return PermissionAnswer::AllowOnce,
            Reach::WithinRoots => format!(
                "{} (headless run; pass {flag} or --mode bypass to permit)",
                card.title
            ),
            Reach::OutsideRoots => format!(
                "{} (outside the project; {flag} covers the project only, --mode bypass \
                 permits everything)",
                card.title
            ),
        };
        if self.live == Live::Text {
            eprintln!("✗ denied: {}", visible_controls(&denial));
        }
        lock(&self.report).denied.push(denial);
        PermissionAnswer::RejectOnce
    }

    fn send(&self, event: AgentEvent) {
        self.record(&event);
        self.show(&event);
    }
}

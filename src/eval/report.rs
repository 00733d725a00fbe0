//! Printing a run: a line per task as it finishes, then the score; or one JSON document.

use serde::Serialize;

use super::runner::TaskResult;

/// The whole run, as `--output json` prints it.
#[derive(Debug, Serialize)]
pub struct RunReport {
    pub model: String,
    pub passed: usize,
    pub total: usize,
    /// Passed over total, in percent.
    pub score: f64,
    pub seconds: f64,
    pub tokens: u64,
    pub tasks: Vec<TaskResult>,
}

impl RunReport {
    pub fn new(model: String, mut tasks: Vec<TaskResult>, order: &[String], seconds: f64) -> Self {
        tasks.sort_by_key(|t| order.iter().position(|id| id == &t.id));
        let passed = tasks.iter().filter(|t| t.passed).count();
        let total = tasks.len();
        Self {
            model,
            passed,
            total,
            score: if total == 0 {
                0.0
            } else {
                100.0 * passed as f64 / total as f64
            },
            seconds,
            tokens: tasks.iter().map(|t| t.outcome.tokens).sum(),
            tasks,
        }
    }

    /// The closing lines of a text run.
    pub fn summary(&self) -> String {
        let mut kinds: Vec<&str> = Vec::new();
        for t in &self.tasks {
            if !kinds.contains(&t.kind) {
                kinds.push(t.kind);
            }
        }
        let per_kind: Vec<String> = kinds
            .iter()
            .map(|kind| {
                let of: Vec<&TaskResult> = self.tasks.iter().filter(|t| t.kind == *kind).collect();
                let passed = of.iter().filter(|t| t.passed).count();
                format!("{kind} {passed}/{}", of.len())
            })
            .collect();
        format!(
            "\nscore: {}/{} ({:.0}%) on {} in {:.0} s, {} tokens\n       {}",
            self.passed,
            self.total,
            self.score,
            self.model,
            self.seconds,
            self.tokens,
            per_kind.join(" · ")
        )
    }
}

/// One finished task as a text line, with each failed check's reason beneath it.
pub fn task_line(result: &TaskResult) -> String {
    let o = &result.outcome;
    let mut line = format!(
        "{} {:<28} {:>2} rounds {:>7} tokens {:>6.1} s",
        if result.passed { "PASS" } else { "FAIL" },
        format!("{}/{}", result.kind, result.id),
        o.rounds,
        o.tokens,
        o.seconds
    );
    if let Some(stop) = o.stop.filter(|s| *s != "end_turn") {
        line.push_str(&format!("  ({stop})"));
    }
    for verdict in result.verdicts.iter().filter(|v| !v.passed) {
        line.push_str(&format!(
            "\n     ✗ {}: {}",
            verdict.check,
            verdict.why.as_deref().unwrap_or("failed")
        ));
    }
    if let Some(dir) = &result.project {
        line.push_str(&format!(
            "\n     project kept at {0} (the turn's history: {0}.history.jsonl)",
            dir.display()
        ));
    }
    line
}

//! Batch files: one JSON object per line.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use hearth_conversation::Mode;

/// One prompt of a run.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    pub id: String,
    pub prompt: String,
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub mode: Option<Mode>,
}

/// A batch line that is not a job; the run reports it and goes on with the others.
#[derive(Debug, Clone, PartialEq)]
pub struct BadLine {
    pub line: usize,
    pub problem: String,
}

/// Parses a batch file. Blank lines are skipped; every bad line is reported, not fatal.
pub fn parse_batch(text: &str) -> (Vec<Job>, Vec<BadLine>) {
    let mut jobs: Vec<Job> = Vec::new();
    let mut bad = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line_no = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Job>(line) {
            Ok(job) if job.id.trim().is_empty() => bad.push(BadLine {
                line: line_no,
                problem: "`id` is empty".into(),
            }),
            Ok(job) if jobs.iter().any(|j| j.id == job.id) => {
                bad.push(BadLine {
                    line: line_no,
                    problem: format!("id `{}` repeats an earlier line", job.id),
                });
            }
            Ok(job) => jobs.push(job),
            Err(err) => bad.push(BadLine {
                line: line_no,
                problem: err.to_string(),
            }),
        }
    }
    (jobs, bad)
}

/// Makes a job's cwd absolute against the run's directory.
pub fn job_cwd(job: &Job, default: &Path) -> PathBuf {
    match &job.cwd {
        Some(dir) if dir.is_absolute() => dir.clone(),
        Some(dir) => default.join(dir),
        None => default.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_lines_become_jobs_and_bad_lines_are_reported_by_number() {
        let text = concat!(
            "{\"id\": \"a\", \"prompt\": \"one\"}\n",
            "\n",
            "not json\n",
            "{\"id\": \"b\", \"prompt\": \"two\", \"mode\": \"bypass\", \"cwd\": \"sub\"}\n",
            "{\"id\": \"a\", \"prompt\": \"again\"}\n",
            "{\"id\": \"c\", \"prompt\": \"x\", \"colour\": 1}\n",
            "{\"id\": \"d\", \"prompt\": \"y\", \"mode\": \"yolo\"}\n",
        );
        let (jobs, bad) = parse_batch(text);
        assert_eq!(
            jobs.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(jobs[1].mode, Some(Mode::Bypass));
        assert_eq!(bad.iter().map(|b| b.line).collect::<Vec<_>>(), [3, 5, 6, 7]);
        assert!(bad[1].problem.contains("repeats"));
        assert_eq!(job_cwd(&jobs[1], Path::new("/w")), PathBuf::from("/w/sub"));
        assert_eq!(job_cwd(&jobs[0], Path::new("/w")), PathBuf::from("/w"));
    }
}

//! The built-in task suite: what each task sets up, asks and checks, read from the TOML files
//! under `src/eval/tasks/` (compiled in, so `hearth eval` needs nothing on disk).

use std::collections::BTreeMap;

use serde::Deserialize;

/// The suite's files, one per kind of task.
const SUITE_FILES: [(&str, &str); 6] = [
    ("answer.toml", include_str!("tasks/answer.toml")),
    ("read.toml", include_str!("tasks/read.toml")),
    ("create.toml", include_str!("tasks/create.toml")),
    ("edit.toml", include_str!("tasks/edit.toml")),
    ("run.toml", include_str!("tasks/run.toml")),
    ("multi.toml", include_str!("tasks/multi.toml")),
];

/// One agent task: a fresh project, one prompt, checks on what came of it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    /// Unique in the suite; `--tasks` selects by it.
    pub id: String,
    /// What the user types.
    pub prompt: String,
    /// The project's files before the prompt: path (relative, `/`-separated) → content.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// Every check must hold for the task to pass.
    #[serde(rename = "check")]
    pub checks: Vec<Check>,
    /// A model's right answer, one string per round (Hermes text), for the harness's own tests:
    /// played by a scripted model, it must pass.
    #[serde(default)]
    pub solution: Vec<String>,
    /// Wrong answers in the same form, each of which must fail.
    #[serde(default)]
    pub wrong: Vec<Vec<String>>,
}

/// The kind of task, from the file it is in (answer, read, create, edit, run, multi).
#[derive(Debug, Clone)]
pub struct SuiteTask {
    pub kind: &'static str,
    pub task: Task,
}

/// Languages an answer's code can be run in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CodeLanguage {
    Python,
    Rust,
}

/// One check on the outcome of a task. Text comparisons ignore case.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "is", rename_all = "snake_case", deny_unknown_fields)]
pub enum Check {
    /// The turn's answer text contains at least one of `any`.
    AnswerHas { any: Vec<String> },
    /// The turn's answer text contains none of `none`.
    AnswerLacks { none: Vec<String> },
    /// The answer's code (its first fenced block in `language`, else its only block) runs:
    /// Python with `test` appended must exit 0; Rust must compile, run, and print `stdout` first.
    AnswerCode {
        language: CodeLanguage,
        #[serde(default)]
        test: String,
        #[serde(default)]
        stdout: String,
    },
    /// The file exists and contains every one of `all`.
    FileHas {
        path: String,
        #[serde(default)]
        all: Vec<String>,
    },
    /// The file, if it exists, contains none of `none`.
    FileLacks { path: String, none: Vec<String> },
    /// The file does not exist.
    FileMissing { path: String },
    /// The file is exactly as the task set it up.
    FileUnchanged { path: String },
    /// `sh -c command` in the project exits 0 (and prints `stdout` somewhere, when given).
    Runs {
        command: String,
        #[serde(default)]
        stdout: String,
    },
    /// The answer contains the first line `sh -c command` prints in the project after the turn
    /// (a value only running something can give: a version, a checksum).
    AnswerHasOutput { command: String },
    /// The model called this tool, and the call succeeded.
    Called { tool: String },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SuiteFile {
    task: Vec<Task>,
}

/// Why the built-in suite could not be read (a bug in hearth, found by its tests).
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    #[error("eval suite {file}: {source}")]
    Parse {
        file: &'static str,
        #[source]
        source: toml::de::Error,
    },
    #[error("eval suite: task id `{0}` is used twice")]
    DuplicateId(String),
    #[error("eval suite: task `{0}` has no checks")]
    NoChecks(String),
    #[error("no task matches `{0}` (see `hearth eval --list`)")]
    NoMatch(String),
}

/// Every task of the built-in suite, in file order.
pub fn builtin_suite() -> Result<Vec<SuiteTask>, SuiteError> {
    let mut tasks: Vec<SuiteTask> = Vec::new();
    for (file, text) in SUITE_FILES {
        let parsed: SuiteFile =
            toml::from_str(text).map_err(|source| SuiteError::Parse { file, source })?;
        let kind = file.trim_end_matches(".toml");
        for task in parsed.task {
            if tasks.iter().any(|t| t.task.id == task.id) {
                return Err(SuiteError::DuplicateId(task.id));
            }
            if task.checks.is_empty() {
                return Err(SuiteError::NoChecks(task.id));
            }
            tasks.push(SuiteTask { kind, task });
        }
    }
    Ok(tasks)
}

/// The tasks `--tasks` names: ids, kinds (`read`), or prefixes ending in `*`; all when empty.
pub fn select(suite: Vec<SuiteTask>, wanted: &[String]) -> Result<Vec<SuiteTask>, SuiteError> {
    if wanted.is_empty() {
        return Ok(suite);
    }
    for pattern in wanted {
        if !suite.iter().any(|t| matches(t, pattern)) {
            return Err(SuiteError::NoMatch(pattern.clone()));
        }
    }
    Ok(suite
        .into_iter()
        .filter(|t| wanted.iter().any(|p| matches(t, p)))
        .collect())
}

fn matches(task: &SuiteTask, pattern: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => task.task.id.starts_with(prefix),
        None => task.task.id == pattern || task.kind == pattern,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_suite_parses_and_every_task_has_a_solution_to_prove_its_checks() {
        let suite = builtin_suite().unwrap();
        assert!(suite.len() >= 30, "only {} tasks", suite.len());
        for t in &suite {
            assert!(!t.task.solution.is_empty(), "{} has no solution", t.task.id);
            for path in t.task.files.keys() {
                assert!(
                    !path.starts_with('/') && !path.contains(".."),
                    "{}: {path}",
                    t.task.id
                );
            }
        }
    }

    #[test]
    fn selection_by_id_kind_and_prefix_and_a_pattern_that_matches_nothing_is_an_error() {
        let suite = builtin_suite().unwrap();
        let reads = select(suite.clone(), &["read".into()]).unwrap();
        assert!(reads.iter().all(|t| t.kind == "read") && !reads.is_empty());
        let first = suite[0].task.id.clone();
        let one = select(suite.clone(), std::slice::from_ref(&first)).unwrap();
        assert_eq!(one.len(), 1);
        let prefix = format!("{}*", &first[..3]);
        assert!(!select(suite.clone(), &[prefix]).unwrap().is_empty());
        assert!(matches!(
            select(suite, &["nope".into()]),
            Err(SuiteError::NoMatch(_))
        ));
    }
}

//! Running the code an answer holds: the fenced block in the asked language, compiled or
//! interpreted in a scratch directory with a time limit.

use std::path::Path;
use std::time::Duration;

use super::suite::CodeLanguage;
use crate::agent::FIXED_CODE;

/// How long one check's program may run (a compile included).
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(60);

/// What a finished check command did.
#[derive(Debug)]
pub struct Ran {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Why a check command gave no verdict of its own.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot start `{program}`: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{0}` ran past {CHECK_TIMEOUT:?}")]
    Timeout(String),
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// The code to run: the first fenced block tagged with the language, else the only fenced
/// block, else a file in the language the turn wrote into the project (the code went there
/// instead of into the reply), else the whole answer (bare code still gets judged).
///
/// Where hearth fixed the answer's code (check_answer_code), the code judged is the fix: what
/// follows the last line that introduces one, as a user reading the answer takes it.
pub fn code_for(answer: &str, language: CodeLanguage, project: &Path, setup: &[&str]) -> String {
    let answer = answer
        .rsplit_once(FIXED_CODE)
        .map_or(answer, |(_, fixed)| fixed);
    if fenced_blocks(answer).is_empty()
        && let Some(code) = written_file(project, language, setup)
    {
        return code;
    }
    extract_code(answer, language)
}

/// The largest file in `language` below `project` that the task did not set up.
fn written_file(project: &Path, language: CodeLanguage, setup: &[&str]) -> Option<String> {
    let ext = match language {
        CodeLanguage::Python => "py",
        CodeLanguage::Rust => "rs",
    };
    let mut found: Option<String> = None;
    let mut dirs = vec![project.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).ok()?.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() && dirs.len() < 64 {
                dirs.push(path);
            } else if kind.is_file() && path.extension().is_some_and(|e| e == ext) {
                let relative = path
                    .strip_prefix(project)
                    .ok()?
                    .to_string_lossy()
                    .into_owned();
                if setup.contains(&relative.as_str()) {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                if found.as_ref().is_none_or(|f| text.len() > f.len()) {
                    found = Some(text);
                }
            }
        }
    }
    found
}

/// The code an answer holds: the first fenced block tagged with the language, else the only
/// fenced block, else the whole answer.
pub fn extract_code(answer: &str, language: CodeLanguage) -> String {
    let blocks = fenced_blocks(answer);
    let tags: &[&str] = match language {
        CodeLanguage::Python => &["python", "py", "python3"],
        CodeLanguage::Rust => &["rust", "rs"],
    };
    if let Some((_, code)) = blocks
        .iter()
        .find(|(tag, _)| tags.contains(&tag.to_ascii_lowercase().as_str()))
    {
        return code.clone();
    }
    match blocks.as_slice() {
        [(_, code)] => code.clone(),
        [] => answer.to_string(),
        // Several untagged blocks: the longest is most likely the program.
        _ => blocks
            .iter()
            .map(|(_, c)| c)
            .max_by_key(|c| c.len())
            .cloned()
            .unwrap_or_default(),
    }
}

/// Every ```fenced``` block: its info string's first word and its body.
fn fenced_blocks(text: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        match open.take() {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    let tag = info.split_whitespace().next().unwrap_or("").to_string();
                    open = Some((tag, String::new()));
                }
            }
            Some((tag, mut body)) => {
                if trimmed.starts_with("```") {
                    blocks.push((tag, body));
                } else {
                    body.push_str(line);
                    body.push('\n');
                    open = Some((tag, body));
                }
            }
        }
    }
    // An unclosed block (the model stopped) still counts.
    if let Some(block) = open {
        blocks.push(block);
    }
    blocks
}

/// Runs `program args` in `dir` with the check time limit, stdin closed.
pub async fn run_program(dir: &Path, program: &str, args: &[&str]) -> Result<Ran, RunError> {
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let child = command.output();
    let output = tokio::time::timeout(CHECK_TIMEOUT, child)
        .await
        .map_err(|_| RunError::Timeout(format!("{program} {}", args.join(" "))))?
        .map_err(|source| RunError::Spawn {
            program: program.to_string(),
            source,
        })?;
    Ok(Ran {
        success: output.status.success(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}

/// Runs an answer's code: Python with `test` appended, Rust compiled and run. `Ok(None)` when
/// it ran as the check demands, `Ok(Some(why))` when it did not.
pub async fn run_answer_code(
    code: &str,
    language: CodeLanguage,
    test: &str,
    stdout: &str,
) -> Result<Option<String>, RunError> {
    let scratch = tempfile::tempdir().map_err(|source| RunError::Write {
        path: "a scratch directory".into(),
        source,
    })?;
    let dir = scratch.path();
    let write = |name: &str, text: &str| {
        std::fs::write(dir.join(name), text).map_err(|source| RunError::Write {
            path: name.to_string(),
            source,
        })
    };
    let ran = match language {
        CodeLanguage::Python => {
            write("solution.py", &format!("{code}\n\n{test}\n"))?;
            run_program(dir, "python3", &["solution.py"]).await?
        }
        CodeLanguage::Rust => {
            write("main.rs", code)?;
            let built = run_program(
                dir,
                "rustc",
                &["--edition", "2021", "-o", "solution", "main.rs"],
            )
            .await?;
            if !built.success {
                return Ok(Some(format!(
                    "does not compile: {}",
                    first_error(&built.stderr)
                )));
            }
            run_program(dir, "./solution", &[]).await?
        }
    };
    if !ran.success {
        return Ok(Some(format!("fails: {}", last_lines(&ran.stderr, 3))));
    }
    Ok(stdout_mismatch(&ran.stdout, stdout))
}

/// `None` when `actual`'s lines begin with `expected`'s (each compared trimmed).
pub fn stdout_mismatch(actual: &str, expected: &str) -> Option<String> {
    let expected: Vec<&str> = expected.lines().map(str::trim).collect();
    if expected.iter().all(|l| l.is_empty()) {
        return None;
    }
    let actual: Vec<&str> = actual.lines().map(str::trim).collect();
    let matched = actual.len() >= expected.len() && actual[..expected.len()] == expected[..];
    (!matched).then(|| {
        format!(
            "printed {:?}, expected it to begin {:?}",
            clip(&actual.join("\n"), 120),
            clip(&expected.join("\n"), 120)
        )
    })
}

fn first_error(stderr: &str) -> String {
    stderr
        .lines()
        .find(|l| l.starts_with("error"))
        .map_or_else(|| last_lines(stderr, 2), |l| clip(l, 200))
}

pub fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    clip(&lines[lines.len().saturating_sub(n)..].join(" | "), 300)
}

pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tagged_block_wins_then_the_only_block_then_the_whole_answer() {
        let answer = "Here:\n```text\nnot code\n```\n```python\ndef f():\n    return 1\n```\n";
        assert_eq!(
            extract_code(answer, CodeLanguage::Python),
            "def f():\n    return 1\n"
        );
        assert_eq!(
            extract_code("```\nfn main() {}\n```", CodeLanguage::Rust),
            "fn main() {}\n"
        );
        assert_eq!(extract_code("x = 1", CodeLanguage::Python), "x = 1");
        assert_eq!(
            extract_code("```rust\nfn main() {", CodeLanguage::Rust),
            "fn main() {\n"
        );
    }

    #[test]
    fn stdout_must_begin_with_the_expected_lines() {
        assert_eq!(stdout_mismatch("1\n2\nFizz\n4\n", "1\n2\nFizz"), None);
        assert!(stdout_mismatch("1\n2\n3\n", "1\n2\nFizz").is_some());
        assert!(stdout_mismatch("1\n", "1\n2").is_some());
        assert_eq!(stdout_mismatch("anything", ""), None);
    }
}

//! Judging a finished task: every check of the task, plus the guarantees hearth owes on every
//! task (an answer was given, and it is not a tool call shown as text).

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use super::code::{clip, code_for, last_lines, run_answer_code, run_program};
use super::outcome::Outcome;
use super::suite::{Check, Task};

/// One check's verdict.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// The check, in a few words.
    pub check: String,
    pub passed: bool,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl Verdict {
    fn new(check: String, failure: Option<String>) -> Self {
        Self {
            check,
            passed: failure.is_none(),
            why: failure,
        }
    }
}

/// A JSON object shaped like a tool call (`"name": …, "arguments"`), as small models write
/// when they invent a tool: shown to a user as the answer, it is a failure whatever it names.
static CALL_SHAPED: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r#"\{\s*"name"\s*:\s*"[^"]*"\s*,\s*"(arguments|parameters)"\s*:"#).ok()
});

/// Judges `outcome` of `task`, whose project is `project` after the turn.
pub async fn judge(task: &Task, project: &Path, outcome: &Outcome) -> Vec<Verdict> {
    let mut verdicts = guarantees(outcome);
    for check in &task.checks {
        verdicts.push(judge_check(check, project, outcome).await);
    }
    verdicts
}

/// What every task must show whatever it asked.
fn guarantees(outcome: &Outcome) -> Vec<Verdict> {
    let mut out = Vec::new();
    if let Some(error) = &outcome.error {
        out.push(Verdict::new(
            "the turn ends well".into(),
            Some(error.clone()),
        ));
    }
    let answered =
        (outcome.final_answer.trim().is_empty()).then(|| "the last answer is blank".to_string());
    out.push(Verdict::new("answers in text".into(), answered));
    // The last answer is what the user is left with; a call narrated in an earlier round and
    // then run is the model thinking aloud, not the answer.
    let shown_call = CALL_SHAPED
        .as_ref()
        .and_then(|re| re.find(&outcome.final_answer))
        .map(|m| format!("the answer shows a call: {}", clip(m.as_str(), 60)));
    out.push(Verdict::new(
        "shows no call as the answer".into(),
        shown_call,
    ));
    out
}

async fn judge_check(check: &Check, project: &Path, outcome: &Outcome) -> Verdict {
    let answer = outcome.answer.to_lowercase();
    match check {
        Check::AnswerHas { any } => {
            let found = any.iter().any(|t| answer.contains(&t.to_lowercase()));
            Verdict::new(
                format!("answer has {}", quoted(any, " or ")),
                (!found).then(|| format!("answer: {:?}", clip(outcome.answer.trim(), 160))),
            )
        }
        Check::AnswerLacks { none } => {
            let found = none.iter().find(|t| answer.contains(&t.to_lowercase()));
            Verdict::new(
                format!("answer lacks {}", quoted(none, " and ")),
                found.map(|t| format!("answer has {t:?}")),
            )
        }
        Check::AnswerCode {
            language,
            test,
            stdout,
        } => {
            let setup: Vec<&str> = outcome.setup.keys().map(String::as_str).collect();
            let code = code_for(&outcome.answer, *language, project, &setup);
            let failure = match run_answer_code(&code, *language, test, stdout).await {
                Ok(failure) => failure,
                Err(err) => Some(format!("could not run the check: {err}")),
            };
            Verdict::new(format!("the answer's {language:?} code works"), failure)
        }
        Check::FileHas { path, all } => {
            let failure = match std::fs::read_to_string(project.join(path)) {
                Err(err) => Some(format!("cannot read it: {err}")),
                Ok(text) => {
                    let text = text.to_lowercase();
                    all.iter()
                        .find(|t| !text.contains(&t.to_lowercase()))
                        .map(|t| format!("it lacks {t:?}"))
                }
            };
            Verdict::new(format!("{path} has {}", quoted(all, " and ")), failure)
        }
        Check::FileLacks { path, none } => {
            let text = std::fs::read_to_string(project.join(path))
                .unwrap_or_default()
                .to_lowercase();
            let found = none.iter().find(|t| text.contains(&t.to_lowercase()));
            Verdict::new(
                format!("{path} lacks {}", quoted(none, " and ")),
                found.map(|t| format!("it has {t:?}")),
            )
        }
        Check::FileMissing { path } => Verdict::new(
            format!("{path} is gone"),
            project
                .join(path)
                .exists()
                .then(|| "it still exists".to_string()),
        ),
        Check::FileUnchanged { path } => {
            let now = std::fs::read_to_string(project.join(path)).ok();
            let failure = match (&now, outcome.setup.get(path)) {
                (Some(now), Some(before)) if now == before => None,
                (None, _) => Some("it is gone".into()),
                _ => Some("it was changed".into()),
            };
            Verdict::new(format!("{path} is unchanged"), failure)
        }
        Check::Runs { command, stdout } => {
            let failure = match run_program(project, "sh", &["-c", command]).await {
                Err(err) => Some(err.to_string()),
                Ok(ran) if !ran.success => Some(format!(
                    "it fails: {}",
                    last_lines(&format!("{}\n{}", ran.stdout, ran.stderr), 3)
                )),
                Ok(ran) if !normalised(&ran.stdout).contains(&normalised(stdout)) => {
                    Some(format!("it printed {:?}", clip(ran.stdout.trim(), 120)))
                }
                Ok(_) => None,
            };
            Verdict::new(format!("`{}` works", clip(command, 50)), failure)
        }
        Check::AnswerHasOutput { command } => {
            let failure = match run_program(project, "sh", &["-c", command]).await {
                Err(err) => Some(err.to_string()),
                Ok(ran) => {
                    let expected = ran.stdout.lines().next().unwrap_or("").trim().to_string();
                    if expected.is_empty() {
                        Some(format!("`{command}` printed nothing to compare"))
                    } else if answer.contains(&expected.to_lowercase()) {
                        None
                    } else {
                        Some(format!(
                            "answer lacks {expected:?}: {:?}",
                            clip(outcome.answer.trim(), 120)
                        ))
                    }
                }
            };
            Verdict::new(format!("answer has what `{command}` prints"), failure)
        }
        Check::Called { tool } => {
            let called = outcome.calls.iter().any(|c| &c.name == tool && c.succeeded);
            Verdict::new(
                format!("called {tool}"),
                (!called).then(|| "no successful call".to_string()),
            )
        }
    }
}

/// Lines trimmed, blank lines dropped: `runs` compares output this way.
fn normalised(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

fn quoted(items: &[String], joiner: &str) -> String {
    items
        .iter()
        .map(|i| format!("{i:?}"))
        .collect::<Vec<_>>()
        .join(joiner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invented_call_shown_as_text_and_a_blank_answer_break_the_guarantees() {
        let call = "```json\n{\n  \"name\": \"write_fizzbuzz\",\n  \"arguments\": {}\n}\n```";
        let shown = Outcome {
            answer: call.into(),
            final_answer: call.into(),
            ..Outcome::default()
        };
        let verdicts = guarantees(&shown);
        assert!(
            verdicts
                .iter()
                .any(|v| !v.passed && v.check.contains("call"))
        );
        let blank = Outcome {
            answer: "\n\n".into(),
            final_answer: "\n\n".into(),
            ..Outcome::default()
        };
        assert!(guarantees(&blank).iter().any(|v| !v.passed));
        let fine = Outcome {
            answer: "Done: `name` is set.".into(),
            final_answer: "Done.".into(),
            ..Outcome::default()
        };
        assert!(guarantees(&fine).iter().all(|v| v.passed));
    }

    #[tokio::test]
    async fn a_call_counts_only_when_it_was_made_and_succeeded() {
        use super::super::outcome::CallOutcome;
        let check = Check::Called {
            tool: "list_dir".into(),
        };
        let dir = std::env::temp_dir();
        let with = |name: &str, succeeded| Outcome {
            calls: vec![CallOutcome {
                name: name.into(),
                succeeded,
            }],
            ..Outcome::default()
        };
        assert!(
            judge_check(&check, &dir, &with("list_dir", true))
                .await
                .passed
        );
        assert!(
            !judge_check(&check, &dir, &with("list_dir", false))
                .await
                .passed
        );
        assert!(!judge_check(&check, &dir, &with("glob", true)).await.passed);
    }
}

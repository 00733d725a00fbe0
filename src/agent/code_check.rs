//! Checks the code of an answer (part of the check_answer_code assist): the Rust of a block is
//! type-checked by `rustc` (metadata only: nothing is linked or run), the Python of a block is
//! compiled by `python3` (never run). Asked to "write fizzbuzz in rust", Qwen2.5-Coder 0.5B
//! answers with a `fn fizzbuzz` that returns `result.trim()` as a `String` and no `main`: code
//! that a user pastes and sees fail. The checker's complaint is what the fix is asked with.

use std::path::Path;

use serde_json::Value;

use super::answer_code::fenced_blocks;
use super::write_check::{Syntax, parse_with};

/// Longest complaint kept, in characters: the first error or two, with rustc's hint.
const COMPLAINT_CHARS: usize = 800;

/// What an answer's code block is written in, where it can be checked here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeLanguage {
    Rust,
    Python,
}

impl CodeLanguage {
    /// The language a fence's tag names.
    pub fn of_tag(tag: &str) -> Option<Self> {
        match tag.to_ascii_lowercase().as_str() {
            "rust" | "rs" => Some(Self::Rust),
            "python" | "python3" | "py" => Some(Self::Python),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Rust => "Rust",
            Self::Python => "Python",
        }
    }

    /// The fence tag the fixed code is shown with.
    pub fn tag(self) -> &'static str {
        match self {
            Self::Rust => "rust",
            Self::Python => "python",
        }
    }

    /// What the check's verdict is called: "does not compile" / "does not parse".
    pub fn fault(self) -> &'static str {
        match self {
            Self::Rust => "does not compile",
            Self::Python => "does not parse",
        }
    }
}

/// A block of an answer to check: its language, its code, and whether it must be a program
/// (a Rust block is checked as a binary, `main` included, unless the request asked for a
/// function or a type, or the block holds no `main` and the request named none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerCode {
    pub language: CodeLanguage,
    pub code: String,
    pub program: bool,
}

/// The block of `answer` to check: its last block in a language checked here. `None` where the
/// answer holds none, or the block is not code to check: a Python console session (`>>>`),
/// or Rust that reaches outside its own text (see [`reaches_out`]).
pub fn answer_code(answer: &str, request: &str) -> Option<AnswerCode> {
    if !asks_for_code(request) {
        return None;
    }
    let (language, code) = fenced_blocks(answer)
        .into_iter()
        .rev()
        .find_map(|(tag, code)| Some((CodeLanguage::of_tag(&tag)?, code)))?;
    if code.trim().is_empty() {
        return None;
    }
    let program = match language {
        CodeLanguage::Python => {
            if code.trim_start().starts_with(">>>") {
                return None;
            }
            false
        }
        CodeLanguage::Rust => {
            if reaches_out(&code) {
                return None;
            }
            code.contains("fn main") || !asks_for_a_part(request)
        }
    };
    Some(AnswerCode {
        language,
        code,
        program,
    })
}

/// Whether the request asks for code: asked which test fails, the 0.5B quotes the test run's
/// output in a `python` block, which is no code to fix.
fn asks_for_code(request: &str) -> bool {
    const CODE: [&str; 14] = [
        "write",
        "implement",
        "create",
        "generate",
        "code",
        "program",
        "function",
        "script",
        "snippet",
        "fix",
        "rewrite",
        "refactor",
        "example",
        "implementation",
    ];
    has_word(request, &CODE)
}

/// Whether the request asks for a part of a program (a function, a type, a module) rather
/// than a program: "write fizzbuzz in rust" is a program, "a Rust function that…" is not.
fn asks_for_a_part(request: &str) -> bool {
    const PARTS: [&str; 9] = [
        "function", "fn", "method", "struct", "enum", "trait", "impl", "module", "library",
    ];
    has_word(request, &PARTS)
}

/// Whether `text` holds one of `words` (or its plural) as a whole word, in any case.
fn has_word(text: &str, words: &[&str]) -> bool {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .map(str::to_ascii_lowercase)
        .any(|word| {
            words
                .iter()
                .any(|w| word == *w || word.strip_suffix('s') == Some(w))
        })
}

/// Whether Rust code would make the compiler read something besides its own text: a file
/// (`include_str!`, `#[path]`, `mod name;`) or the environment (`env!`). Its complaint could
/// then quote a secret to the model, so such code is not checked.
fn reaches_out(code: &str) -> bool {
    const REACHES: [&str; 5] = ["include", "env!", "#[path", "#![path", "extern crate"];
    if REACHES.iter().any(|r| code.contains(r)) {
        return true;
    }
    code.lines().any(|line| {
        let line = line.trim();
        let line = line.strip_prefix("pub ").unwrap_or(line);
        line.starts_with("mod ") && line.ends_with(';')
    })
}

/// What a checker found wrong with code: its complaint, and the code with the fixes the
/// checker itself suggests applied, where it suggests any (rustc's `help: try using a
/// conversion method: .to_string()`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub complaint: String,
    pub suggested: Option<String>,
}

/// What the checker finds wrong with `code`; `None` when it passes or cannot be checked here
/// (no `rustc` or `python3` installed outside `project`, a checker that did not answer in
/// time).
pub async fn fault(code: &AnswerCode, project: &Path) -> Option<Fault> {
    let mut fault = match code.language {
        CodeLanguage::Python => Fault {
            complaint: Syntax::Python.complaint(&code.code, project).await?,
            suggested: None,
        },
        CodeLanguage::Rust => rust_fault(code, project).await?,
    };
    fault.complaint = fault
        .complaint
        .trim()
        .chars()
        .take(COMPLAINT_CHARS)
        .collect();
    Some(fault)
}

/// `rustc`'s errors for the block, type-checked as a binary or a library, read from its JSON
/// diagnostics. The metadata goes to a scratch directory that is removed after.
async fn rust_fault(code: &AnswerCode, project: &Path) -> Option<Fault> {
    let scratch = tempfile::tempdir().ok()?;
    let out_dir = scratch.path().to_str()?.to_string();
    let crate_type = if code.program { "bin" } else { "lib" };
    let args = [
        "--edition",
        "2021",
        "--crate-type",
        crate_type,
        "--crate-name",
        "answer",
        "--emit=metadata",
        "-A",
        "warnings",
        "--error-format=json",
        "--out-dir",
        &out_dir,
        "-",
    ];
    let said = parse_with("rustc", &args, &code.code, project).await?;
    Some(read_diagnostics(&said, &code.code))
}

/// The errors of rustc's JSON diagnostics (one per line) as rustc would print them, less its
/// closing summary, and `code` with the first suggestion of each error applied.
fn read_diagnostics(said: &str, code: &str) -> Fault {
    let mut complaint = String::new();
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    for line in said.lines() {
        let Ok(diagnostic) = serde_json::from_str::<Value>(line) else {
            // Not a diagnostic (rustc could not start, an ICE): its words are the complaint.
            complaint.push_str(line);
            complaint.push('\n');
            continue;
        };
        let message = diagnostic["message"].as_str().unwrap_or("");
        if diagnostic["level"] != "error" || message.starts_with("aborting due to") {
            continue;
        }
        complaint.push_str(diagnostic["rendered"].as_str().unwrap_or(message));
        let children = diagnostic["children"].as_array().into_iter().flatten();
        // Several suggestions of one error are alternatives: the first is taken.
        if let Some(parts) = children.map(suggestion).find(|parts| !parts.is_empty()) {
            edits.extend(parts);
        }
    }
    let suggested = apply(code, edits).filter(|fixed| fixed != code);
    Fault {
        complaint,
        suggested,
    }
}

/// The replacements one suggestion makes in the answer's own text (`<anon>`, read from
/// stdin), where rustc deems it applicable (`MachineApplicable`, `MaybeIncorrect`: the check
/// after decides). A suggestion with placeholders is none.
fn suggestion(child: &Value) -> Vec<(usize, usize, String)> {
    let spans = child["spans"].as_array().into_iter().flatten();
    let parts: Vec<Option<(usize, usize, String)>> = spans
        .filter(|span| span["suggested_replacement"].is_string())
        .map(|span| {
            let applicable = matches!(
                span["suggestion_applicability"].as_str(),
                Some("MachineApplicable" | "MaybeIncorrect")
            );
            let own = span["file_name"] == "<anon>";
            let start = usize::try_from(span["byte_start"].as_u64()?).ok()?;
            let end = usize::try_from(span["byte_end"].as_u64()?).ok()?;
            let text = span["suggested_replacement"].as_str()?.to_string();
            (applicable && own).then_some((start, end, text))
        })
        .collect();
    parts
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .unwrap_or_default()
}

/// `code` with `edits` made; a later edit that overlaps an earlier one (an alternative at the
/// same place) is left out. `None` when an edit is outside the text or splits a character.
fn apply(code: &str, mut edits: Vec<(usize, usize, String)>) -> Option<String> {
    edits.sort_by_key(|(start, end, _)| (*start, *end));
    let mut out = String::with_capacity(code.len());
    let mut at = 0;
    let mut last_start = None;
    for (start, end, text) in edits {
        if start < at || last_start == Some(start) {
            continue;
        }
        last_start = Some(start);
        if end < start || !code.is_char_boundary(start) || !code.is_char_boundary(end) {
            return None;
        }
        out.push_str(code.get(at..start)?);
        out.push_str(&text);
        at = end;
    }
    out.push_str(code.get(at..)?);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_checkable_block_is_taken_and_a_program_is_told_from_a_part() {
        let answer =
            "```python\nprint(1)\n```\n\n```rust\nfn fizzbuzz() {}\n```\n\n```text\n1\n```";
        let code = answer_code(answer, "write fizzbuzz in rust").unwrap();
        assert_eq!(code.language, CodeLanguage::Rust);
        assert_eq!(code.code, "fn fizzbuzz() {}\n");
        assert!(code.program, "a request for fizzbuzz wants a program");
        let code = answer_code(answer, "Write a Rust function that reverses a string").unwrap();
        assert!(!code.program, "a function is asked for");
        let code = answer_code("```rs\nfn main() {}\n```", "write a rust fn for it").unwrap();
        assert!(code.program, "a block with main is a program");
        assert!(answer_code("```python\n>>> 1 + 1\n2\n```", "what is 1+1").is_none());
        assert!(answer_code("no code here", "write fizzbuzz").is_none());
        assert!(answer_code("```bash\nls\n```", "list files").is_none());
    }

    #[test]
    fn rust_that_would_read_files_or_the_environment_is_not_checked() {
        for code in [
            "const S: &str = include_str!(\"/etc/passwd\");",
            "compile_error!(include_str!(\"secret.txt\"));",
            "const K: &str = env!(\"API_KEY\");",
            "const K: Option<&str> = option_env!(\"API_KEY\");",
            "#[path = \"/home/u/.ssh/id_rsa\"]\nmod key;",
            "mod secrets;\nfn main() {}",
            "pub mod secrets;",
        ] {
            let answer = format!("```rust\n{code}\n```");
            assert!(answer_code(&answer, "write it in rust").is_none(), "{code}");
        }
        let inline = "mod inner { pub fn f() {} }\nfn main() { inner::f() }";
        assert!(answer_code(&format!("```rust\n{inline}\n```"), "write it").is_some());
    }

    #[test]
    fn only_an_answer_to_a_request_for_code_is_checked() {
        let quoted = "```python\ntest_mathx.py:1:1: SyntaxError\n```";
        assert!(answer_code(quoted, "Run the tests. Which test fails?").is_none());
        assert!(answer_code(quoted, "Write a test for mathx.py").is_some());
    }

    #[test]
    fn asking_for_a_part_is_told_by_whole_words() {
        assert!(asks_for_a_part("Write functions to parse dates"));
        assert!(asks_for_a_part("a struct Point with a Display impl"));
        assert!(!asks_for_a_part("write fizzbuzz in rust"));
        assert!(!asks_for_a_part("a program that prints the types of fonts"));
    }

    #[test]
    fn each_error_takes_its_first_applicable_suggestion() {
        let code = "let a: String = x.trim();\nlet b = y;\n";
        let diagnostic = |message: &str, children: Value| {
            serde_json::json!({
                "level": "error", "message": message, "rendered": format!("error: {message}\n"),
                "children": children,
            })
            .to_string()
        };
        let span = |start: usize, end: usize, text: &str, applicability: &str| {
            serde_json::json!({
                "file_name": "<anon>", "byte_start": start, "byte_end": end,
                "suggested_replacement": text, "suggestion_applicability": applicability,
            })
        };
        let said = [
            diagnostic(
                "mismatched types",
                serde_json::json!([
                    { "spans": [span(24, 24, ".to_string()", "MaybeIncorrect")] },
                    { "spans": [span(24, 24, ".into()", "MaybeIncorrect")] },
                ]),
            ),
            diagnostic(
                "cannot find value `y`",
                serde_json::json!([{ "spans": [span(34, 35, "<name>", "HasPlaceholders")] }]),
            ),
            serde_json::json!({"level": "error", "message": "aborting due to 2 previous errors"})
                .to_string(),
        ]
        .join("\n");
        let fault = read_diagnostics(&said, code);
        assert_eq!(
            fault.complaint,
            "error: mismatched types\nerror: cannot find value `y`\n"
        );
        assert_eq!(
            fault.suggested.as_deref(),
            Some("let a: String = x.trim().to_string();\nlet b = y;\n")
        );
        // A span outside the text, or inside a character, makes no edit at all.
        assert_eq!(apply("é", vec![(1, 1, "x".into())]), None);
        assert_eq!(apply("ab", vec![(1, 9, "x".into())]), None);
        // Insertions at one place are alternatives: the first is made.
        assert_eq!(
            apply("ab", vec![(1, 1, "x".into()), (1, 1, "y".into())]).as_deref(),
            Some("axb")
        );
    }

    #[tokio::test]
    async fn rustc_finds_the_missing_main_and_suggests_the_conversion() {
        let project = tempfile::tempdir().unwrap();
        let broken = AnswerCode {
            language: CodeLanguage::Rust,
            code: "fn f() -> String {\n    \" a \".trim()\n}\n".into(),
            program: true,
        };
        let Some(found) = fault(&broken, project.path()).await else {
            eprintln!("no rustc here: skipped");
            return;
        };
        assert!(found.complaint.contains("E0601"), "{found:?}");
        assert!(found.complaint.contains("mismatched types"), "{found:?}");
        assert!(!found.complaint.contains("aborting due to"), "{found:?}");
        assert_eq!(
            found.suggested.as_deref(),
            Some("fn f() -> String {\n    \" a \".trim().to_string()\n}\n")
        );
        let fixed = AnswerCode {
            code: "fn f() -> String {\n    \" a \".trim().to_string()\n}\nfn main() { f(); }\n"
                .into(),
            ..broken.clone()
        };
        assert_eq!(fault(&fixed, project.path()).await, None);
        // A library is not asked for main, and unused code is no error.
        let part = AnswerCode {
            code: "fn unused() -> u8 { 1 }\n".into(),
            program: false,
            ..broken
        };
        assert_eq!(fault(&part, project.path()).await, None);
    }
}

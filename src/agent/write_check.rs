//! The write check (the check_writes assist). Asked to "create hello.py that prints Hello,
//! world!", Qwen2.5-Coder 0.5B writes `Hello, world!` into it; asked for a config.json, it
//! writes a placeholder; and the result it reads says only that the file was written. After a
//! write or an edit succeeds, the file is read back (through the host, so as the editor holds
//! it) and, where its type can be parsed here, parsed: JSON and TOML in process, Python with
//! `python3`'s own compiler and shell scripts with `sh -n`. Neither of those runs the file:
//! both only parse the text, which they get on stdin. A file that does not parse gets the
//! parser's message at the end of the call's result, so that the model can write it again.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use hearth_conversation::{AgentEvent, HistoryEntry, ToolCallRecord};
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use super::turn_context::TurnContext;
use crate::tools::{EDIT_FILE, WRITE_FILE, resolve};

/// How long a parser process may take before the check is given up.
const PARSE_TIMEOUT: Duration = Duration::from_secs(10);
/// Most memory a parser process may map: rustc checking a small program maps under 1 GiB.
const PARSE_MEMORY: u64 = 2 << 30;
/// Longest complaint kept, in characters.
const COMPLAINT_CHARS: usize = 300;

/// Compiles stdin as a module without running it; prints where it fails, if it does.
const PYTHON_CHECK: &str = "import sys\n\
src = sys.stdin.buffer.read()\n\
try:\n    compile(src, 'the file', 'exec', dont_inherit=True)\n\
except SyntaxError as e:\n    print(f'line {e.lineno}: {e.msg}')\n\
except (ValueError, RecursionError, MemoryError) as e:\n    print(f'{type(e).__name__}: {e}')\n";

/// Prints the standard-library modules stdin's module uses as `module.name` without binding
/// the name anywhere (no import, assignment, parameter or definition of it): `math.pi` in a
/// file that never imports math. Nothing for a file that does not parse or star-imports.
const PYTHON_UNIMPORTED: &str = r#"import ast, sys
try:
    tree = ast.parse(sys.stdin.buffer.read())
except Exception:
    sys.exit(0)
bound = set(dir(__builtins__))
for node in ast.walk(tree):
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        if any(a.name == '*' for a in node.names):
            sys.exit(0)
        bound.update((a.asname or a.name).split('.')[0] for a in node.names)
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        bound.add(node.name)
    elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
        bound.add(node.id)
    elif isinstance(node, ast.arg):
        bound.add(node.arg)
    elif isinstance(node, (ast.Global, ast.Nonlocal)):
        bound.update(node.names)
    elif isinstance(node, ast.ExceptHandler) and node.name:
        bound.add(node.name)
    elif type(node).__name__ in ('MatchAs', 'MatchStar') and node.name:
        bound.add(node.name)
    elif type(node).__name__ == 'MatchMapping' and node.rest:
        bound.add(node.rest)
std = getattr(sys, 'stdlib_module_names', ())
used = {n.value.id for n in ast.walk(tree) if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name) and isinstance(n.value.ctx, ast.Load)}
print('unimported:', *sorted(m for m in used - bound if m in std))
"#;

/// A file type this check can parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    Json,
    Toml,
    Python,
    Shell,
}

impl Syntax {
    /// The type of `path`, by its extension.
    pub fn of(path: &Path) -> Option<Self> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "json" => Some(Self::Json),
            "toml" => Some(Self::Toml),
            "py" => Some(Self::Python),
            "sh" => Some(Self::Shell),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Json => "JSON",
            Self::Toml => "TOML",
            Self::Python => "Python",
            Self::Shell => "shell",
        }
    }

    /// What is wrong with `text` as this type, or `None` when it parses or cannot be checked
    /// here (no `python3` outside `project`, a parser that did not answer in time).
    pub async fn complaint(self, text: &str, project: &Path) -> Option<String> {
        let complaint = match self {
            Self::Json => serde_json::from_str::<serde_json::Value>(text)
                .err()
                .map(|e| e.to_string()),
            Self::Toml => toml::from_str::<toml::Table>(text)
                .err()
                .map(|e| e.message().to_string()),
            Self::Python => {
                let args = ["-I", "-S", "-c", PYTHON_CHECK];
                parse_with("python3", &args, text, project).await
            }
            Self::Shell => parse_with(shell_of(text), &["-n"], text, project).await,
        }?;
        let complaint = complaint.trim();
        Some(complaint.chars().take(COMPLAINT_CHARS).collect())
    }
}

/// The shell a script is written for: bash where its `#!` line names bash (`#!/bin/bash`,
/// `#!/usr/bin/env bash`), else `sh`. A bash script's `for ((…))` is not an error.
fn shell_of(text: &str) -> &'static str {
    let first = text.lines().next().unwrap_or("");
    let names_bash = first.starts_with("#!")
        && first[2..]
            .split(|c: char| c == '/' || c.is_whitespace())
            .any(|word| word == "bash");
    if names_bash { "bash" } else { "sh" }
}

/// The standard-library modules `text` (Python) uses without importing them (see
/// [`PYTHON_UNIMPORTED`]); none where `python3` cannot be run or the turn is cancelled.
pub async fn unimported_modules(ctx: &TurnContext<'_>, text: &str) -> Vec<String> {
    tokio::select! {
        () = ctx.cancel.cancelled() => Vec::new(),
        modules = unimported(text, ctx.cwd) => modules,
    }
}

async fn unimported(text: &str, project: &Path) -> Vec<String> {
    let args = ["-I", "-S", "-c", PYTHON_UNIMPORTED];
    let said = parse_with("python3", &args, text, project).await;
    // Only the script's own line counts: a failed run prints a traceback, never that.
    let Some(modules) = said.as_deref().and_then(|s| s.strip_prefix("unimported:")) else {
        return Vec::new();
    };
    modules
        .split_whitespace()
        .filter(|m| m.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .map(str::to_string)
        .collect()
}

/// Where `program` is installed: the first absolute `PATH` directory that holds it outside
/// `project`. A relative entry (`.`) or one inside the project would let a file the model
/// wrote (`./python3`) be run by the check itself.
fn installed(program: &str, project: &Path) -> Option<PathBuf> {
    installed_in(&std::env::var_os("PATH")?, program, project)
}

fn installed_in(path: &std::ffi::OsStr, program: &str, project: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path)
        .filter(|dir| dir.is_absolute() && !dir.starts_with(project))
        .map(|dir| dir.join(program))
        .find(|file| {
            std::fs::metadata(file)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Runs `program` (found by [`installed`]) on `text` as its stdin, from `/`; what it printed
/// when it found a fault (a non-empty output, or a failed exit with its error output).
pub(super) async fn parse_with(
    program: &str,
    args: &[&str],
    text: &str,
    project: &Path,
) -> Option<String> {
    let mut command = Command::new(installed(program, project)?);
    crate::host::cap_memory(&mut command, PARSE_MEMORY);
    crate::host::die_with_parent(&mut command);
    let mut child = command
        .current_dir("/")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take()?;
    let input = text.as_bytes().to_vec();
    let feed = async move {
        // A parser that stops reading early fails the write; its verdict still comes.
        let _ = stdin.write_all(&input).await;
    };
    let (_, output) = tokio::time::timeout(PARSE_TIMEOUT, async {
        tokio::join!(feed, child.wait_with_output())
    })
    .await
    .ok()?;
    let output = output.ok()?;
    let said = String::from_utf8_lossy(&output.stdout).trim().to_string();
    if !said.is_empty() {
        return Some(said);
    }
    (!output.status.success()).then(|| String::from_utf8_lossy(&output.stderr).into_owned())
}

/// The type and the text of the file at `raw` (a call's path argument), where it is of a type
/// this check parses and can be read.
pub async fn checkable_file(ctx: &TurnContext<'_>, raw: &str) -> Option<(Syntax, String)> {
    let resolved = resolve(raw, ctx.cwd, ctx.home).ok()?;
    let syntax = Syntax::of(resolved.path())?;
    let text = ctx
        .client
        .read_text_file(resolved.path(), None, None)
        .await
        .ok()?;
    Some((syntax, text))
}

impl Syntax {
    /// [`Syntax::complaint`] for the turn's project; `None` also when the turn is cancelled
    /// while a parser runs.
    pub async fn complaint_in(self, ctx: &TurnContext<'_>, text: &str) -> Option<String> {
        tokio::select! {
            () = ctx.cancel.cancelled() => None,
            complaint = self.complaint(text, ctx.cwd) => complaint,
        }
    }
}

/// Adds the parser's complaint to the result of each write or edit in `calls` whose file does
/// not parse as its type, and tells the user as well.
pub async fn check_writes(
    ctx: &TurnContext<'_>,
    calls: &[ToolCallRecord],
    results: &mut [HistoryEntry],
) {
    for result in results.iter_mut() {
        let HistoryEntry::ToolResult {
            call_id,
            output,
            is_error: false,
            ..
        } = result
        else {
            continue;
        };
        let Some(call) = calls
            .iter()
            .find(|c| c.id == *call_id && (c.name == WRITE_FILE || c.name == EDIT_FILE))
        else {
            continue;
        };
        let Some(raw) = call.arguments.get("path").and_then(|p| p.as_str()) else {
            continue;
        };
        let Some((syntax, text)) = checkable_file(ctx, raw).await else {
            continue;
        };
        let Some(complaint) = syntax.complaint_in(ctx, &text).await else {
            if syntax == Syntax::Python {
                let modules = unimported_modules(ctx, &text).await;
                if !modules.is_empty() {
                    let missing = modules.join(", ");
                    ctx.client.send(AgentEvent::Notice {
                        text: format!("{raw} uses {missing} without importing it"),
                    });
                    output.push_str(&unimported_for_model(raw, &modules));
                }
            }
            continue;
        };
        tracing::info!(path = raw, "a written file does not parse");
        ctx.client.send(AgentEvent::Notice {
            text: format!("{raw} is not valid {}: {complaint}", syntax.name()),
        });
        output.push_str(&complaint_for_model(raw, &call.name, syntax, &complaint));
    }
}

/// What the model reads after the result of a write (`tool`) whose file does not parse. An
/// edited file is not asked to be written whole: it may have been broken before the edit.
fn complaint_for_model(path: &str, tool: &str, syntax: Syntax, complaint: &str) -> String {
    let name = syntax.name();
    let what_to_do = if tool == WRITE_FILE {
        let program = if matches!(syntax, Syntax::Python | Syntax::Shell) {
            " A program's file holds its code, not what the program prints."
        } else {
            ""
        };
        format!(
            "{program} Write the file again with write_file, its whole content as valid {name}."
        )
    } else {
        " If your edit broke it, fix that with edit_file.".to_string()
    };
    format!("\n\nBut {path} is not valid {name}: {complaint}.{what_to_do}")
}

/// What the model reads after the result of a write whose Python file uses standard modules
/// it never imports.
fn unimported_for_model(path: &str, modules: &[String]) -> String {
    let imports: Vec<String> = modules.iter().map(|m| format!("`import {m}`")).collect();
    format!(
        "\n\nBut {path} uses {} without importing it: it fails when that line runs. Add {} \
         at the top of {path} with edit_file.",
        modules.join(", "),
        imports.join(" and ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A project that holds no parser.
    const HERE: &str = "/nonexistent-project";

    #[tokio::test]
    async fn each_type_is_parsed_and_only_broken_text_gets_a_complaint() {
        assert_eq!(Syntax::of(Path::new("a/Config.JSON")), Some(Syntax::Json));
        assert_eq!(Syntax::of(Path::new("run.sh")), Some(Syntax::Shell));
        assert_eq!(Syntax::of(Path::new("README.md")), None);
        assert_eq!(Syntax::of(Path::new("Makefile")), None);

        assert_eq!(
            Syntax::Json
                .complaint("{\"port\": 8080}", Path::new(HERE))
                .await,
            None
        );
        let json = Syntax::Json
            .complaint("<the complete content of config.json>", Path::new(HERE))
            .await
            .unwrap();
        assert!(json.contains("line 1 column 1"), "{json}");
        assert_eq!(
            Syntax::Toml
                .complaint("[a]\nb = 1\n", Path::new(HERE))
                .await,
            None
        );
        assert!(
            Syntax::Toml
                .complaint("[a\nb = 1", Path::new(HERE))
                .await
                .is_some()
        );

        // Where the parsers are installed (CI installs python3; sh is everywhere).
        if Command::new("python3").arg("-V").output().await.is_ok() {
            assert_eq!(
                Syntax::Python
                    .complaint("print('Hello, world!')\n", Path::new(HERE))
                    .await,
                None
            );
            let python = Syntax::Python
                .complaint("Hello, world!\n", Path::new(HERE))
                .await
                .unwrap();
            assert!(python.starts_with("line 1: "), "{python}");
            // Parsed, never run: a file that would write or loop is only compiled.
            let marker = std::env::temp_dir().join(format!("hearth-ran-{}", std::process::id()));
            let harmful = format!("open({:?}, 'w').write('ran')\nwhile True: pass\n", marker);
            assert_eq!(
                Syntax::Python.complaint(&harmful, Path::new(HERE)).await,
                None
            );
            assert!(!marker.exists());
        }
        assert_eq!(
            Syntax::Shell
                .complaint("for i in 1 2; do echo $i; done\n", Path::new(HERE))
                .await,
            None
        );
        assert!(
            Syntax::Shell
                .complaint("for i in 1 2; do echo $i done\n", Path::new(HERE))
                .await
                .is_some()
        );
        let long = Syntax::Json
            .complaint(&"[".repeat(100_000), Path::new(HERE))
            .await
            .unwrap();
        assert!(long.chars().count() <= COMPLAINT_CHARS);
    }

    #[test]
    fn a_script_whose_first_line_names_bash_is_parsed_by_bash() {
        assert_eq!(shell_of("#!/bin/bash\nfor ((i=0;;)); do :; done\n"), "bash");
        assert_eq!(shell_of("#!/usr/bin/env bash\n"), "bash");
        assert_eq!(shell_of("#!/bin/sh\necho hi\n"), "sh");
        assert_eq!(shell_of("echo bash\n"), "sh");
        assert_eq!(shell_of("#!/opt/bashful/sh\n"), "sh");
    }

    #[tokio::test]
    async fn standard_modules_used_without_an_import_are_named() {
        if installed("python3", Path::new(HERE)).is_none() {
            return;
        }
        let text = "import os\nfrom json import loads as j\n\ndef area(r, re):\n    \
                    return math.pi * r * r + os.sep + re.x + j.x + foo.bar\n";
        assert_eq!(unimported(text, Path::new(HERE)).await, ["math"]);
        for bound in [
            "import math\nmath.pi\n",
            "math = 3\nmath.pi\n",
            "from os import *\nmath.pi\n",
            "def f(:\n    math.pi\n",
        ] {
            assert!(
                unimported(bound, Path::new(HERE)).await.is_empty(),
                "{bound}"
            );
        }
        assert_eq!(
            unimported_for_model("shapes.py", &["math".to_string()]),
            "\n\nBut shapes.py uses math without importing it: it fails when that line runs. \
             Add `import math` at the top of shapes.py with edit_file."
        );
    }

    #[test]
    fn parsers_are_only_found_in_absolute_path_directories_outside_the_project() {
        use std::os::unix::fs::PermissionsExt;
        let project = tempfile::tempdir().unwrap();
        let system = tempfile::tempdir().unwrap();
        for dir in [
            project.path().to_path_buf(),
            project.path().join("bin"),
            system.path().to_path_buf(),
        ] {
            std::fs::create_dir_all(&dir).unwrap();
            let program = dir.join("python3");
            std::fs::write(&program, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let path = std::env::join_paths([
            Path::new("."),
            &project.path().join("bin"),
            project.path(),
            system.path(),
        ])
        .unwrap();
        assert_eq!(
            installed_in(&path, "python3", project.path()),
            Some(system.path().join("python3"))
        );
        let only_project = std::env::join_paths([project.path().join("bin")]).unwrap();
        assert_eq!(installed_in(&only_project, "python3", project.path()), None);
        let not_executable = system.path().join("sh");
        std::fs::write(&not_executable, "").unwrap();
        assert_eq!(installed_in(&path, "sh", project.path()), None);
    }

    #[test]
    fn the_model_is_told_what_is_wrong_and_what_to_do() {
        let told = complaint_for_model(
            "hello.py",
            WRITE_FILE,
            Syntax::Python,
            "line 1: invalid syntax",
        );
        assert_eq!(
            told,
            "\n\nBut hello.py is not valid Python: line 1: invalid syntax. A program's file \
             holds its code, not what the program prints. Write the file again with \
             write_file, its whole content as valid Python."
        );
        assert!(!complaint_for_model("a.json", WRITE_FILE, Syntax::Json, "x").contains("program"));
        assert_eq!(
            complaint_for_model(
                "app.py",
                EDIT_FILE,
                Syntax::Python,
                "line 9: invalid syntax"
            ),
            "\n\nBut app.py is not valid Python: line 9: invalid syntax. If your edit broke it, \
             fix that with edit_file."
        );
    }
}

//! Checking the work, not the words (the unchanged_files assist): asked to "create hello.py"
//! or "make area_circle in shapes.py use math.pi", small models answer with the code in a
//! fenced block, or say "the file has been updated", and change nothing. When a request asks
//! for a change to files it names, hearth looks at those files (through the host, so an
//! editor's unsaved buffer counts) when the model answers; if none of them changed, the model
//! gets one nudge to make the change with the tools.

use std::path::{Path, PathBuf};

use hearth_backend::ContentPart;
use hearth_conversation::HistoryEntry;

use crate::host::ClientOps;
use crate::parse::ResolvedFormat;
use crate::tools::{EDIT_FILE, WRITE_FILE, named_project_paths};

/// Words that ask for a change to the project's files ("create hello.py", "fix the typo in
/// app.py"). "write" alone does not count: "write a function that parses config.json" asks
/// for code, and a file it names only counts when it does not exist yet.
const CHANGE_VERBS: [&str; 17] = [
    "create", "add", "edit", "change", "fix", "rename", "update", "replace", "remove", "delete",
    "append", "insert", "move", "make", "set", "bump", "save",
];

/// Words that open a question: "how do I add serde to Cargo.toml?" asks for advice.
const QUESTION_WORDS: [&str; 14] = [
    "how", "what", "why", "which", "where", "when", "who", "can", "could", "should", "would", "is",
    "does", "do",
];

/// Files one request is checked on at most.
const MAX_TARGETS: usize = 4;
/// A file larger than this is not snapshotted (its change is not checked).
const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// What a named file held when the turn began.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Missing,
    Text(String),
}

/// The files a request asks to change, as they were when its turn began.
pub struct ChangeCheck {
    targets: Vec<(String, PathBuf, Seen)>,
}

impl ChangeCheck {
    /// The check for `asked` (the user's words), or `None` when it asks for no change to a
    /// named project file.
    pub async fn start(asked: &str, cwd: &Path, client: &dyn ClientOps) -> Option<Self> {
        let write = asks_to_write(asked)?;
        let mut targets = Vec::new();
        for (name, resolved) in named_project_paths(asked, cwd) {
            if targets.len() == MAX_TARGETS {
                break;
            }
            let path = resolved.path().to_path_buf();
            let Some(seen) = look(&path, client).await else {
                continue;
            };
            // "Write a script that reads data.csv": only a file still to be made is the target.
            if write == Verb::Write && seen != Seen::Missing {
                continue;
            }
            // "Make area_circle use math.pi": a dotted name that is no file is code.
            if seen == Seen::Missing && !names_a_file_type(&name) {
                continue;
            }
            targets.push((name, path, seen));
        }
        (!targets.is_empty()).then_some(Self { targets })
    }

    /// Whether any of the files differs from what it was when the turn began.
    pub async fn changed(&self, client: &dyn ClientOps) -> bool {
        for (_, path, seen) in &self.targets {
            if look(path, client).await.as_ref() != Some(seen) {
                return true;
            }
        }
        false
    }

    /// The files the request asks to change: each name as written, where it is, and what it
    /// held when the turn began (`None`: it did not exist).
    pub fn targets(&self) -> impl Iterator<Item = (&str, &Path, Option<&str>)> {
        self.targets.iter().map(|(name, path, seen)| {
            let held = match seen {
                Seen::Missing => None,
                Seen::Text(text) => Some(text.as_str()),
            };
            (name.as_str(), path.as_path(), held)
        })
    }

    /// The nudge for an answer that left every file as it was, as the next user message.
    pub fn nudge(&self, format: ResolvedFormat) -> HistoryEntry {
        let state: Vec<String> = self
            .targets
            .iter()
            .map(|(name, _, seen)| match seen {
                Seen::Missing => format!("{name} does not exist"),
                Seen::Text(_) => format!("{name} is as it was"),
            })
            .collect();
        // The first file still to be made, else the first to change: the call is spelled out
        // with its real path, as small models copy a template more readily than they follow
        // an instruction (told only to "call write_file", the 1.5B answered "I created it").
        let call = self
            .targets
            .iter()
            .find(|(_, _, seen)| *seen == Seen::Missing)
            .or(self.targets.first())
            .map(|(name, _, seen)| spelled_call(name, *seen == Seen::Missing, format))
            .unwrap_or_default();
        let text = format!(
            "You have not changed any file yet: {}. Code in your answer does not change the \
             project, and saying it is done does not either: only a tool call does. Reply now \
             with only the call, nothing before it, {}",
            state.join(", "),
            call
        );
        HistoryEntry::User {
            content: vec![ContentPart::text(text)],
        }
    }
}

/// The call that makes the change to `name`: a write when it does not exist, else an edit.
fn spelled_call(name: &str, missing: bool, format: ResolvedFormat) -> String {
    let (tool, arguments) = if missing {
        (
            WRITE_FILE,
            [
                ("path", name.to_string()),
                ("content", format!("<the complete content of {name}>")),
            ],
        )
    } else {
        (
            EDIT_FILE,
            [
                ("path", name.to_string()),
                (
                    "edits",
                    format!(
                        "[{{\"old_text\": \"<exact text now in {name}>\", \"new_text\": \"<what replaces it>\"}}]"
                    ),
                ),
            ],
        )
    };
    match format {
        ResolvedFormat::Native => format!("a call to `{tool}` with the path \"{name}\"."),
        ResolvedFormat::Hermes => {
            let [(k1, v1), (k2, v2)] = &arguments;
            let second = if *k2 == "edits" {
                v2.clone()
            } else {
                format!("\"{v2}\"")
            };
            format!(
                "exactly like this:\n<tool_call>\n{{\"name\": \"{tool}\", \"arguments\": {{\"{k1}\": \"{v1}\", \"{k2}\": {second}}}}}\n</tool_call>"
            )
        }
        ResolvedFormat::Xml => {
            let parameters: String = arguments
                .iter()
                .map(|(k, v)| format!("<parameter={k}>\n{v}\n</parameter>\n"))
                .collect();
            format!(
                "exactly like this:\n<tool_call>\n<function={tool}>\n{parameters}</function>\n</tool_call>"
            )
        }
    }
}

/// Which kind of change a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verb {
    /// create, add, fix, rename, ...: any named file.
    Change,
    /// write: only a named file that does not exist yet.
    Write,
}

/// The kind of change `asked` asks for, if any: a request (not a question) with a change verb.
fn asks_to_write(asked: &str) -> Option<Verb> {
    let words: Vec<String> = asked
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let question = asked.trim_end().ends_with('?')
        || words
            .first()
            .is_some_and(|w| QUESTION_WORDS.contains(&w.as_str()));
    if question {
        return None;
    }
    if words.iter().any(|w| CHANGE_VERBS.contains(&w.as_str())) {
        Some(Verb::Change)
    } else if words.iter().any(|w| w == "write") {
        Some(Verb::Write)
    } else {
        None
    }
}

/// Extensions of the files people ask for by name. A missing file counts as a target only
/// with one of these: `math.pi`, `os.path` or `settings.MAX_RETRIES` in a request name code.
const FILE_TYPES: [&str; 114] = [
    "py",
    "pyi",
    "rs",
    "toml",
    "json",
    "jsonc",
    "md",
    "mdx",
    "txt",
    "rst",
    "sh",
    "bash",
    "zsh",
    "fish",
    "ps1",
    "bat",
    "cmd",
    "yaml",
    "yml",
    "js",
    "mjs",
    "cjs",
    "ts",
    "tsx",
    "jsx",
    "vue",
    "svelte",
    "html",
    "htm",
    "css",
    "scss",
    "sass",
    "less",
    "c",
    "h",
    "cc",
    "cpp",
    "cxx",
    "hpp",
    "hh",
    "m",
    "mm",
    "go",
    "java",
    "kt",
    "kts",
    "scala",
    "groovy",
    "gradle",
    "clj",
    "cljs",
    "edn",
    "rb",
    "php",
    "pl",
    "pm",
    "swift",
    "dart",
    "lua",
    "r",
    "jl",
    "ex",
    "exs",
    "erl",
    "hrl",
    "hs",
    "ml",
    "mli",
    "fs",
    "fsx",
    "nim",
    "zig",
    "cs",
    "vb",
    "sql",
    "csv",
    "tsv",
    "xml",
    "svg",
    "ini",
    "cfg",
    "conf",
    "env",
    "properties",
    "lock",
    "proto",
    "graphql",
    "gql",
    "tf",
    "tfvars",
    "nix",
    "dockerfile",
    "gitignore",
    "dockerignore",
    "editorconfig",
    "gitattributes",
    "tex",
    "bib",
    "ipynb",
    "log",
    "diff",
    "patch",
    "make",
    "mk",
    "cmake",
    "asm",
    "s",
    "v",
    "sv",
    "vhd",
    "sol",
    "elm",
    "purs",
    "cabal",
];

/// Whether `name` ends in an extension of [`FILE_TYPES`] (or is a name like `Makefile`).
fn names_a_file_type(name: &str) -> bool {
    let file = name.rsplit('/').next().unwrap_or(name);
    match file.rsplit_once('.') {
        Some((_, ext)) => FILE_TYPES.contains(&ext.to_ascii_lowercase().as_str()),
        None => true,
    }
}

/// What `path` holds now; `None` for a file too large to compare.
async fn look(path: &Path, client: &dyn ClientOps) -> Option<Seen> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() && meta.len() <= MAX_FILE_BYTES => {}
        Ok(meta) if meta.is_file() => return None,
        // A directory, a FIFO, a device: not something this check reads.
        Ok(_) => return None,
        Err(_) => return Some(Seen::Missing),
    }
    // A file that exists but cannot be read as text (an image, no permission) is not one
    // this check can judge, nor one to write from an answer: it is no target.
    client
        .read_text_file(path, None, None)
        .await
        .ok()
        .map(Seen::Text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_to_change_files_are_told_from_questions_and_requests_for_code() {
        for asked in [
            "Create hello.py that prints hello",
            "Add a function multiply(a, b) to mathutils.py",
            "Make area_circle in shapes.py use math.pi instead of 3.14",
            "Rename helpers.py to tools.py and update the import in main.py.",
        ] {
            assert_eq!(asks_to_write(asked), Some(Verb::Change), "{asked}");
        }
        assert_eq!(
            asks_to_write("Write a script count.sh that prints 3"),
            Some(Verb::Write)
        );
        for asked in [
            "How do I add serde to Cargo.toml?",
            "What does greet.py do",
            "Should I rename utils.py?",
            "Explain main.py",
        ] {
            assert_eq!(asks_to_write(asked), None, "{asked}");
        }
    }

    #[test]
    fn a_missing_name_is_a_file_only_with_a_file_type() {
        for name in [
            "hello.py",
            "src/lib.rs",
            ".gitignore",
            "TODO.md",
            "Makefile",
            "a.JSON",
        ] {
            assert!(names_a_file_type(name), "{name}");
        }
        for name in ["math.pi", "os.path", "settings.MAX_RETRIES", "v1.2"] {
            assert!(!names_a_file_type(name), "{name}");
        }
    }

    #[test]
    fn the_spelled_call_is_valid_in_its_format() {
        for (missing, tool) in [(true, "write_file"), (false, "edit_file")] {
            let hermes = spelled_call("shapes.py", missing, ResolvedFormat::Hermes);
            let json = hermes
                .split_once("<tool_call>\n")
                .and_then(|(_, rest)| rest.strip_suffix("\n</tool_call>"))
                .unwrap();
            let call: serde_json::Value = serde_json::from_str(json).unwrap();
            assert_eq!(call["name"], tool);
            assert_eq!(call["arguments"]["path"], "shapes.py");
        }
        let xml = spelled_call("a.py", false, ResolvedFormat::Xml);
        assert!(xml.contains("<function=edit_file>\n<parameter=path>\na.py\n</parameter>\n"));
        assert!(spelled_call("a.py", true, ResolvedFormat::Native).contains("`write_file`"));
    }
}

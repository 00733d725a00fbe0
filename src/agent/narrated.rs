//! Catching an answer that describes a tool call instead of making it ("you can use the
//! `list_dir` function", "I will use the `grep` tool", `read_file("Cargo.toml")` in a snippet):
//! small models do this often, and the user is left with instructions for a tool only the
//! agent has. Such an answer gets one nudge that names the tool and shows the call format.

use hearth_backend::ContentPart;
use hearth_conversation::HistoryEntry;

use crate::parse::ResolvedFormat;

/// Words after a tool's name that mark it as something to run ("the `grep` function").
const TOOL_NOUNS: [&str; 3] = ["function", "tool", "method"];

/// Words before a tool's name that mark it as something to run ("use `read_file`").
const RUN_VERBS: [&str; 5] = ["use", "using", "call", "calling", "invoke"];

/// The first of `tools` that `text` describes running rather than runs: the name followed by
/// `(` (a call written as code), by "function", "tool" or "method", or right after "use",
/// "call" or "invoke" when it is plainly the tool's name (in backticks of its own, or with an
/// underscore): "use `grep`" is a narration, "use grep -r in a terminal" advice.
pub fn narrated_tool<'a>(text: &str, tools: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    tools
        .into_iter()
        .filter(|name| !name.is_empty())
        .find(|name| occurrences(text, name).any(|at| narrates(text, at, name.len())))
}

/// Byte offsets where `name` stands as a whole identifier in `text`.
fn occurrences<'t>(text: &'t str, name: &'t str) -> impl Iterator<Item = usize> + 't {
    text.match_indices(name).filter_map(move |(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        let part_of_word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        // `glob.glob(` and `os.path` are someone else's names.
        let qualified = before.is_some_and(|c| c == '.' || c == ':');
        (!part_of_word(before) && !part_of_word(after) && !qualified).then_some(at)
    })
}

fn narrates(text: &str, at: usize, len: usize) -> bool {
    let name = &text[at..at + len];
    let quoted = text[..at].ends_with('`') && text[at + len..].starts_with('`');
    let after = text[at + len..].trim_start_matches('`');
    if after.starts_with('(') {
        return true;
    }
    let next_word = after
        .trim_start()
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or_default()
        .to_lowercase();
    if TOOL_NOUNS.contains(&next_word.as_str()) {
        return true;
    }
    let before = text[..at].trim_end_matches('`').trim_end();
    // "use the `x`" and "use `x`", not "the use of x is".
    let previous_word = match last_word(before) {
        (word, rest) if word == "the" => last_word(rest).0,
        (word, _) => word,
    };
    RUN_VERBS.contains(&previous_word.as_str()) && (quoted || name.contains('_'))
}

/// The last word of `text`, lowercased, and what comes before it.
fn last_word(text: &str) -> (String, &str) {
    let start = text.rfind(|c: char| !c.is_alphanumeric()).map_or(0, |i| {
        i + text[i..].chars().next().map_or(1, char::len_utf8)
    });
    (text[start..].to_lowercase(), text[..start].trim_end())
}

/// The nudge for an answer that described a call to `tool`, as the next user message.
pub fn narration_nudge(tool: &str, format: ResolvedFormat) -> HistoryEntry {
    let text = format!(
        "You described using `{tool}` instead of using it. I cannot run tools; you can. Call \
         `{tool}` yourself now, {}\nThen answer my request from its result. If no tool is \
         needed, answer my request directly.",
        call_format_hint(tool, format)
    );
    HistoryEntry::User {
        content: vec![ContentPart::text(text)],
    }
}

/// How a call to `tool` is written in `format`, to end a nudge's "call it now, ...".
pub fn call_format_hint(tool: &str, format: ResolvedFormat) -> String {
    match format {
        ResolvedFormat::Native => "with a tool call".to_string(),
        ResolvedFormat::Hermes => format!(
            "exactly like this:\n<tool_call>\n{{\"name\": \"{tool}\", \"arguments\": {{<its arguments as one JSON object>}}}}\n</tool_call>"
        ),
        ResolvedFormat::Xml => format!(
            "exactly like this:\n<tool_call>\n<function={tool}>\n<parameter=ARGUMENT_NAME>\nvalue\n</parameter>\n</function>\n</tool_call>"
        ),
    }
}

/// A call to `tool` with `arguments` (a JSON object) as `format` writes it, for a nudge that
/// spells out the call to make: small models copy a call more readily than they follow an
/// instruction.
pub fn written_call(tool: &str, arguments: &serde_json::Value, format: ResolvedFormat) -> String {
    match format {
        ResolvedFormat::Native => format!("a call to `{tool}` with the arguments {arguments}"),
        ResolvedFormat::Hermes => {
            format!(
                "<tool_call>\n{{\"name\": \"{tool}\", \"arguments\": {arguments}}}\n</tool_call>"
            )
        }
        ResolvedFormat::Xml => {
            let parameters: String = arguments
                .as_object()
                .into_iter()
                .flatten()
                .map(|(name, value)| {
                    let value = value
                        .as_str()
                        .map_or_else(|| value.to_string(), str::to_string);
                    format!("<parameter={name}>\n{value}\n</parameter>\n")
                })
                .collect();
            format!("<tool_call>\n<function={tool}>\n{parameters}</function>\n</tool_call>")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: [&str; 6] = [
        "read_file",
        "list_dir",
        "grep",
        "bash",
        "write_file",
        "glob",
    ];

    fn narrated(text: &str) -> Option<&'static str> {
        narrated_tool(text, TOOLS)
    }

    /// What the default models wrote in `hearth eval` instead of calling the tool.
    #[test]
    fn catches_the_narrations_small_models_write() {
        let seen = [
            (
                "To list the entries of one directory (not recursive), sorted by name, you can use the `list_dir` function.",
                "list_dir",
            ),
            (
                "To find the file with a TODO comment, I will use the `grep` function. The `grep` function is designed to search",
                "grep",
            ),
            (
                "you can use the following code snippet:\n\n```rust\nlet file_content = read_file(\"Cargo.toml\").unwrap();\n```",
                "read_file",
            ),
            (
                "you can use the `read_file` function with the provided context file path:",
                "read_file",
            ),
            ("Use read_file to open it.", "read_file"),
            ("I'll call `list_dir` first.", "list_dir"),
        ];
        for (text, tool) in seen {
            assert_eq!(narrated(text), Some(tool), "{text}");
        }
    }

    /// Answers that merely contain a tool's name, or a word that happens to be one.
    #[test]
    fn leaves_real_answers_alone() {
        let fine = [
            "The package is named quartz-ledger.",
            "```bash\nls -la\n```",
            "Run this bash command: `ls -la`.",
            "Search with grep -r TODO . in a terminal.",
            "Use grep -c pattern file to count matches.",
            "You can use `grep -rn TODO .` for that.",
            "def read_file_twice(path):\n    return open(path).read()",
            "I read the file: it sets port = 8742.",
            "The glob pattern *.rs matches every Rust file.",
            "import glob\nfiles = glob.glob('*.py')",
        ];
        for text in fine {
            assert_eq!(narrated(text), None, "{text}");
        }
    }

    #[test]
    fn the_nudge_names_the_tool_in_the_models_format() {
        let HistoryEntry::User { content } = narration_nudge("list_dir", ResolvedFormat::Hermes)
        else {
            panic!("a user message")
        };
        let ContentPart::Text { text } = &content[0] else {
            panic!("text")
        };
        assert!(
            text.contains("{\"name\": \"list_dir\", \"arguments\""),
            "{text}"
        );
        assert!(text.contains("<tool_call>"));
        let HistoryEntry::User { content } = narration_nudge("grep", ResolvedFormat::Native) else {
            panic!("a user message")
        };
        let ContentPart::Text { text } = &content[0] else {
            panic!("text")
        };
        assert!(!text.contains("<tool_call>"));
    }

    #[test]
    fn a_written_call_is_one_the_parser_of_its_format_takes() {
        let arguments = serde_json::json!({"command": "sha256sum a.txt", "timeout": 5});
        assert_eq!(
            written_call("bash", &arguments, ResolvedFormat::Hermes),
            "<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\":\"sha256sum a.txt\",\"timeout\":5}}\n</tool_call>"
        );
        assert_eq!(
            written_call("bash", &arguments, ResolvedFormat::Xml),
            "<tool_call>\n<function=bash>\n<parameter=command>\nsha256sum a.txt\n</parameter>\n<parameter=timeout>\n5\n</parameter>\n</function>\n</tool_call>"
        );
    }
}

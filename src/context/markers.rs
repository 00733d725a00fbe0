//! The one-line markers that stand in for elided content, and truncation to a token target.
//!
//! Markers are pure functions of the entry they replace, so the same history always projects
//! to the same bytes and server-side prefix caches keep hitting.

use std::collections::HashMap;

use hearth_conversation::{HistoryEntry, ToolCallId};
use serde_json::Value;

use super::tokens::TokenCounter;

/// Argument keys that name what a call worked on, most telling first.
const TARGET_KEYS: &[&str] = &[
    "path",
    "file",
    "file_path",
    "command",
    "cmd",
    "pattern",
    "query",
    "url",
    "dir",
];

/// Longest target shown in a marker, in characters.
const TARGET_CHARS: usize = 80;

/// String arguments longer than this are replaced when an old call is elided.
const LONG_ARGUMENT_CHARS: usize = 200;

/// Prefix of the user message that carries a compaction summary; later compactions and the
/// `/context` report recognise it by this prefix.
pub const SUMMARY_PREFIX: &str = "[Summary of the earlier conversation, written by the assistant \
     when the context filled up. The user's own messages from that part are kept above.]\n\n";

/// The assistant's answer paired with the summary, so roles keep alternating.
pub const SUMMARY_ACK: &str = "Understood. I will continue from this summary.";

/// What each tool call worked on (`src/main.rs`, `cargo test`), by call id, for markers.
#[derive(Debug, Default)]
pub struct CallTargets(HashMap<ToolCallId, String>);

impl CallTargets {
    /// Collects the targets of every call in `history`.
    pub fn collect(history: &[HistoryEntry]) -> Self {
        let mut map = HashMap::new();
        for entry in history {
            if let HistoryEntry::Assistant { tool_calls, .. } = entry {
                for call in tool_calls {
                    if let Some(target) = call_target(&call.arguments) {
                        map.insert(call.id.clone(), target);
                    }
                }
            }
        }
        Self(map)
    }

    fn get(&self, id: &ToolCallId) -> Option<&str> {
        self.0.get(id).map(String::as_str)
    }
}

/// The argument that best names what a call worked on, shortened to one line.
fn call_target(arguments: &Value) -> Option<String> {
    let object = arguments.as_object()?;
    let value = TARGET_KEYS
        .iter()
        .find_map(|k| object.get(*k).and_then(Value::as_str))
        .or_else(|| object.values().find_map(Value::as_str))?;
    let line = value.lines().next().unwrap_or_default().trim();
    if line.is_empty() {
        return None;
    }
    let mut short: String = line.chars().take(TARGET_CHARS).collect();
    if line.chars().count() > TARGET_CHARS {
        short.push('…');
    }
    Some(short)
}

/// `[output of read_file src/main.rs elided: 240 lines]`
pub fn output_marker(
    call_id: &ToolCallId,
    name: &str,
    output: &str,
    targets: &CallTargets,
) -> String {
    let lines = output.lines().count();
    match targets.get(call_id) {
        Some(target) => format!("[output of {name} {target} elided: {lines} lines]"),
        None => format!("[output of {name} elided: {lines} lines]"),
    }
}

/// `[earlier assistant message elided: 12 lines]`
pub fn prose_marker(text: &str) -> String {
    format!(
        "[earlier assistant message elided: {} lines]",
        text.lines().count()
    )
}

/// A copy of `arguments` with long string values replaced by a marker, so an old call that
/// wrote a whole file stops costing the file.
pub fn shrink_arguments(arguments: &Value) -> Value {
    match arguments {
        Value::String(s) if s.chars().count() > LONG_ARGUMENT_CHARS => {
            Value::String(format!("[{} lines elided from history]", s.lines().count()))
        }
        Value::Array(items) => Value::Array(items.iter().map(shrink_arguments).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), shrink_arguments(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `text` cut to at most `target` tokens: its head and its tail around a marker saying how
/// many lines were left out. The head is kept larger because a tool's output usually says
/// what it is at the top; the tail keeps the error at the bottom. When even the bare marker
/// exceeds `target`, the bare marker is returned (the caller checks the count).
pub fn truncate_to_tokens(text: &str, target: usize, counter: &dyn TokenCounter) -> String {
    if counter.count(text) <= target {
        return text.to_string();
    }
    let bounds: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(text.len()))
        .collect();
    let chars = bounds.len() - 1;
    let build = |keep: usize| -> String {
        let head = keep * 2 / 3;
        let tail = keep - head;
        let head_end = bounds[head];
        let tail_start = bounds[chars - tail];
        let omitted = text[head_end..tail_start].lines().count().max(1);
        format!(
            "{}\n[… {omitted} lines truncated to fit the context window …]\n{}",
            &text[..head_end],
            &text[tail_start..]
        )
    };
    // Largest `keep` whose rendering fits; counts grow (almost) monotonically with `keep`.
    let (mut lo, mut hi) = (0usize, chars);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if counter.count(&build(mid)) <= target {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let mut keep = lo;
    let mut out = build(keep);
    // Tokenizers are not strictly monotone; step down until the count really fits.
    while keep > 0 && counter.count(&out) > target {
        keep = keep.saturating_sub((keep / 16).max(1));
        out = build(keep);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_conversation::ToolCallRecord;

    struct CharCounter;
    impl TokenCounter for CharCounter {
        fn count(&self, text: &str) -> usize {
            text.chars().count()
        }
    }

    #[test]
    fn output_marker_names_the_tool_and_its_target() {
        let history = vec![HistoryEntry::Assistant {
            text: String::new(),
            reasoning: None,
            tool_calls: vec![ToolCallRecord {
                id: ToolCallId::new("c1"),
                name: "read_file".into(),
                arguments: serde_json::json!({"limit": 5, "path": "src/main.rs"}),
            }],
        }];
        let targets = CallTargets::collect(&history);
        let output = "line\n".repeat(240);
        assert_eq!(
            output_marker(&ToolCallId::new("c1"), "read_file", &output, &targets),
            "[output of read_file src/main.rs elided: 240 lines]"
        );
        assert_eq!(
            output_marker(&ToolCallId::new("zz"), "ls", "a\nb", &targets),
            "[output of ls elided: 2 lines]"
        );
    }

    #[test]
    fn shrink_arguments_replaces_only_long_strings() {
        let long = "x\n".repeat(300);
        let args = serde_json::json!({"path": "a.rs", "content": long, "n": [1, long]});
        let shrunk = shrink_arguments(&args);
        assert_eq!(shrunk["path"], "a.rs");
        assert_eq!(shrunk["content"], "[300 lines elided from history]");
        assert_eq!(shrunk["n"][0], 1);
        assert_eq!(shrunk["n"][1], "[300 lines elided from history]");
    }

    #[test]
    fn truncation_fits_the_target_and_keeps_head_and_tail() {
        let text: String = (0..1000).map(|i| format!("line {i} é\n")).collect();
        for target in [80, 500, 3000] {
            let cut = truncate_to_tokens(&text, target, &CharCounter);
            assert!(CharCounter.count(&cut) <= target, "target {target}");
            assert!(cut.starts_with("line 0"));
            assert!(cut.contains("lines truncated"));
        }
        assert_eq!(truncate_to_tokens("short", 10, &CharCounter), "short");
        // A target below the marker itself yields the bare marker.
        let bare = truncate_to_tokens(&text, 3, &CharCounter);
        assert!(bare.contains("lines truncated") && bare.len() < 80);
    }
}

//! `hearth parse`: raw model output on stdin, one JSON event per line on stdout, so users can
//! see what their model emits and the parser can be tested from outside.

use std::io::{Read, Write};
use std::path::PathBuf;

use hearth_backend::ToolSpec;
use serde_json::{Value, json};

use crate::parse::{ParseEvent, ParserConfig, StreamEnd, StreamParser, ThinkStart, ToolFormat};

/// Options of `hearth parse`.
#[derive(Debug, Clone, clap::Args)]
pub struct ParseArgs {
    /// JSON array of tools: `{name, description?, parameters}` or OpenAI tool objects.
    #[arg(long, value_name = "FILE")]
    pub tools: Option<PathBuf>,
    /// Tool-call format to parse.
    #[arg(long, value_enum, default_value = "auto")]
    pub format: FormatArg,
    /// Feed the input N characters at a time (default: all at once).
    #[arg(long, value_name = "N")]
    pub chunk: Option<usize>,
    /// `open`: the prompt ended inside `<think>`.
    #[arg(long, value_enum, default_value = "closed")]
    pub think: ThinkArg,
    /// How generation ended.
    #[arg(long, value_enum, default_value = "stop")]
    pub finish: FinishArg,
}

/// `--format` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    Auto,
    Hermes,
    Xml,
}

/// `--think` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ThinkArg {
    Closed,
    Open,
}

/// `--finish` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FinishArg {
    Stop,
    Length,
}

/// Why `hearth parse` failed; the CLI prints it and exits non-zero.
#[derive(Debug, thiserror::Error)]
pub enum ParseCommandError {
    /// Reading stdin or writing stdout failed (or stdin was not UTF-8).
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// The tools file could not be read.
    #[error("cannot read tools file {path}: {source}")]
    ToolsFile {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The tools file is not a JSON array of tool definitions.
    #[error("invalid tools file {path}: {detail}")]
    ToolsJson { path: PathBuf, detail: String },
}

/// Parses `input` and writes one JSON object per event to `out`.
pub fn run(
    args: &ParseArgs,
    input: &mut impl Read,
    out: &mut impl Write,
) -> Result<(), ParseCommandError> {
    let tools = match &args.tools {
        Some(path) => load_tools(path)?,
        None => Vec::new(),
    };
    let mut text = String::new();
    input.read_to_string(&mut text)?;
    let config = ParserConfig {
        format: match args.format {
            FormatArg::Auto => ToolFormat::Auto,
            FormatArg::Hermes => ToolFormat::Hermes,
            FormatArg::Xml => ToolFormat::Xml,
        },
        tools,
        think: match args.think {
            ThinkArg::Closed => ThinkStart::Closed,
            ThinkArg::Open => ThinkStart::Open,
        },
        text_calls: Default::default(),
    };
    let mut parser = StreamParser::new(config);
    let mut events = Vec::new();
    match args.chunk.filter(|n| *n > 0) {
        Some(n) => {
            let mut start = 0;
            let bounds: Vec<usize> = text
                .char_indices()
                .map(|(i, _)| i)
                .chain([text.len()])
                .collect();
            while start + 1 < bounds.len() {
                let end = (start + n).min(bounds.len() - 1);
                events.extend(parser.feed(&text[bounds[start]..bounds[end]]));
                start = end;
            }
        }
        None => events.extend(parser.feed(&text)),
    }
    events.extend(parser.finish(match args.finish {
        FinishArg::Stop => StreamEnd::Stop,
        FinishArg::Length => StreamEnd::Length,
    }));
    for line in json_lines(events) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// The events as JSON objects, adjacent text (and reasoning) merged.
fn json_lines(events: Vec<ParseEvent>) -> Vec<Value> {
    let mut lines: Vec<Value> = Vec::new();
    for e in events {
        let (kind, text) = match &e {
            ParseEvent::Text(t) => ("text", t),
            ParseEvent::Reasoning(t) => ("reasoning", t),
            _ => ("", &String::new()),
        };
        if !kind.is_empty() {
            if let Some(last) = lines.last_mut()
                && last["type"] == kind
                && let Some(Value::String(prev)) = last.get_mut("text")
            {
                prev.push_str(text);
                continue;
            }
            lines.push(json!({"type": kind, "text": text}));
            continue;
        }
        lines.push(match e {
            ParseEvent::ToolCall(c) => {
                json!({"type": "tool_call", "name": c.name, "arguments": c.arguments})
            }
            ParseEvent::Malformed(m) => {
                json!({"type": "malformed", "raw": m.raw, "reason": m.reason.to_string()})
            }
            _ => json!({"type": "reasoning_cut"}),
        });
    }
    lines
}

fn load_tools(path: &PathBuf) -> Result<Vec<ToolSpec>, ParseCommandError> {
    let text = std::fs::read_to_string(path).map_err(|source| ParseCommandError::ToolsFile {
        path: path.clone(),
        source,
    })?;
    let bad = |detail: String| ParseCommandError::ToolsJson {
        path: path.clone(),
        detail,
    };
    let value: Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let Value::Array(items) = value else {
        return Err(bad("expected a JSON array of tools".into()));
    };
    items
        .iter()
        .map(|item| tool_spec(item).ok_or_else(|| bad(format!("not a tool: {item}"))))
        .collect()
}

/// `{name, description?, parameters?}` or `{"type": "function", "function": {...}}`.
fn tool_spec(item: &Value) -> Option<ToolSpec> {
    let f = item
        .get("function")
        .filter(|f| f.is_object())
        .unwrap_or(item);
    Some(ToolSpec {
        name: f.get("name")?.as_str()?.to_string(),
        description: f
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        parameters: f
            .get("parameters")
            .cloned()
            .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(tools: Option<PathBuf>, chunk: Option<usize>) -> ParseArgs {
        ParseArgs {
            tools,
            format: FormatArg::Auto,
            chunk,
            think: ThinkArg::Closed,
            finish: FinishArg::Stop,
        }
    }

    fn output(a: &ParseArgs, input: &str) -> String {
        let mut out = Vec::new();
        run(a, &mut input.as_bytes(), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn prints_one_json_object_per_event() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tools.json");
        std::fs::write(&path, r#"[{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}, {"name": "list_dir"}]"#).unwrap();
        let input = "<think>hmm</think>Reading 🦀.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n</tool_call><tool_call>{\"name\": \"nope\"}</tool_call>";
        let want = concat!(
            r#"{"type":"reasoning","text":"hmm"}"#,
            "\n",
            r#"{"type":"text","text":"Reading 🦀.\n"}"#,
            "\n",
            r#"{"type":"tool_call","name":"read_file","arguments":{"path":"a"}}"#,
            "\n",
            r#"{"type":"malformed","raw":"<tool_call>{\"name\": \"nope\"}</tool_call>","reason":"unknown tool `nope`; available: read_file, list_dir"}"#,
            "\n",
        );
        assert_eq!(output(&args(Some(path.clone()), None), input), want);
        assert_eq!(
            output(&args(Some(path), Some(3)), input),
            want,
            "chunked output differs"
        );
    }

    #[test]
    fn bad_tools_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tools.json");
        std::fs::write(&path, r#"{"name": "x"}"#).unwrap();
        let e = run(&args(Some(path), None), &mut "".as_bytes(), &mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains("expected a JSON array"));
    }
}

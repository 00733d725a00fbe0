//! Worked examples for small models (the worked_example assist): three short exchanges that
//! show, in the request's own call format, when to call a tool and when to just answer. A
//! 0.5B model told only the format's template invents tools or answers a question about a file
//! from imagination; one concrete exchange of each kind is what it copies.

use hearth_backend::ToolSpec;
use hearth_conversation::{ToolCallId, ToolCallRecord};
use serde_json::json;

use super::config::ResolvedFormat;
use super::render::inline_call;

/// The examples for `format`, naming only tools in `tools`; empty for native tool calling or
/// when the tools they need are not offered.
pub fn render_examples(format: ResolvedFormat, tools: &[ToolSpec]) -> String {
    let offered = |name: &str| tools.iter().any(|t| t.name == name);
    if format == ResolvedFormat::Native || !offered("read_file") || !offered("write_file") {
        return String::new();
    }
    let call = |name: &str, arguments: serde_json::Value| {
        let mut out = String::new();
        let record = ToolCallRecord {
            id: ToolCallId::generate(),
            name: name.to_string(),
            arguments,
        };
        inline_call(format, &record, &mut out);
        out
    };
    let read = call("read_file", json!({"path": "notes.txt"}));
    let write = call(
        "write_file",
        json!({"path": "hello.py", "content": "print(\"hello\")\n"}),
    );
    format!(
        "# Examples\n\n\
         A question about a file: read it first, never guess its content.\n\
         User: What does notes.txt say?\n\
         Assistant:\n{read}\n\n\
         A request for code: write the code in the answer, no tool.\n\
         User: Write a Python function that squares a number.\n\
         Assistant:\n```python\ndef square(x):\n    return x * x\n```\n\n\
         A request to create or change a file: call the tool with the whole content.\n\
         User: Create hello.py that prints hello.\n\
         Assistant:\n{write}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::test_support::tools;
    use crate::parse::{ParserConfig, StreamEnd, StreamParser, ThinkStart, ToolFormat};

    /// Every call an example shows parses, in its own format, as the call it means: the model
    /// is never shown a call hearth would not run.
    #[test]
    fn the_examples_calls_are_calls_in_their_own_format() {
        for (format, tool_format) in [
            (ResolvedFormat::Hermes, ToolFormat::Hermes),
            (ResolvedFormat::Xml, ToolFormat::Xml),
        ] {
            let text = render_examples(format, &tools());
            let mut parser = StreamParser::new(ParserConfig {
                format: tool_format,
                tools: tools(),
                think: ThinkStart::Closed,
                text_calls: Default::default(),
            });
            let mut events = parser.feed(&text);
            events.extend(parser.finish(StreamEnd::Stop));
            let calls: Vec<String> = events
                .iter()
                .filter_map(|e| match e {
                    crate::parse::ParseEvent::ToolCall(c) => Some(c.name.clone()),
                    _ => None,
                })
                .collect();
            assert_eq!(calls, ["read_file", "write_file"], "{format:?}: {text}");
        }
    }

    #[test]
    fn no_examples_without_their_tools_or_for_native_calls() {
        assert_eq!(render_examples(ResolvedFormat::Native, &tools()), "");
        let without_write: Vec<ToolSpec> = tools()
            .into_iter()
            .filter(|t| t.name != "write_file")
            .collect();
        assert_eq!(render_examples(ResolvedFormat::Hermes, &without_write), "");
    }
}

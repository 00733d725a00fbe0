//! The prompt side: the system-prompt tool block in both Qwen formats, the conversation rendered
//! the way the Qwen templates render it (docs/qwen-formats.md §2), and the stop strings.

use hearth_backend::{ContentPart, Message, NativeToolCall, Role, ToolSpec};
use hearth_conversation::{HistoryEntry, ToolCallRecord};
use serde_json::Value;

use super::config::ResolvedFormat;
use super::pyjson;

const HERMES_HEAD: &str = "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>";
const HERMES_TAIL: &str = "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>";
const XML_HEAD: &str = "You have access to the following functions:\n\n<tools>";
const XML_TAIL: &str = "\n</tools>\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple lines\n</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n- Function calls MUST follow the specified format: an inner <function=...></function> block must be nested within <tool_call></tool_call> XML tags\n- Required parameters MUST be specified\n- You may provide optional reasoning for your function call in natural language BEFORE the function call, but NOT after\n- If there is no function call available, answer the question like normal with your current knowledge and do not tell the user about function calls\n</IMPORTANT>";

/// Splits a system prompt into what every session shares (before it) and what is this
/// session's own (after it: the project's path, the mode's rules). The tool block goes between
/// the two, so every session's requests begin with the same tokens and the engine's prefix
/// cache serves a new session, in any project, from the first token of its tool block.
pub const SESSION_PART: &str = "\u{0}session\u{0}";

/// The tool section of the system prompt (empty for native tool calling or no tools).
pub fn render_tool_block(format: ResolvedFormat, tools: &[ToolSpec]) -> String {
    if tools.is_empty() {
        return String::new();
    }
    match format {
        ResolvedFormat::Native => String::new(),
        ResolvedFormat::Hermes => {
            let mut out = String::from(HERMES_HEAD);
            for t in tools {
                // The template's `tool | tojson` of the whole OpenAI tool object, one per line.
                out.push_str(&format!(
                    "\n{{\"type\": \"function\", \"function\": {{\"name\": {}, \"description\": {}, \"parameters\": {}}}}}",
                    pyjson::to_string(&t.name),
                    pyjson::to_string(&t.description),
                    pyjson::to_string(&t.parameters),
                ));
            }
            out.push_str(HERMES_TAIL);
            out
        }
        ResolvedFormat::Xml => {
            let mut out = String::from(XML_HEAD);
            for t in tools {
                xml_tool(&mut out, t);
            }
            out.push_str(XML_TAIL);
            out
        }
    }
}

/// One `<function>` entry of the Qwen3-Coder tool list.
fn xml_tool(out: &mut String, t: &ToolSpec) {
    out.push_str(&format!("\n<function>\n<name>{}</name>", t.name));
    out.push_str(&format!(
        "\n<description>{}</description>",
        t.description.trim()
    ));
    out.push_str("\n<parameters>");
    if let Some(props) = t.parameters.get("properties").and_then(Value::as_object) {
        for (name, fields) in props {
            out.push_str(&format!("\n<parameter>\n<name>{name}</name>"));
            if let Some(ty) = fields.get("type") {
                let ty = ty
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| pyjson::to_string(ty));
                out.push_str(&format!("\n<type>{ty}</type>"));
            }
            if let Some(d) = fields.get("description").and_then(Value::as_str) {
                out.push_str(&format!("\n<description>{}</description>", d.trim()));
            }
            if let Some(e) = fields.get("enum") {
                out.push_str(&format!("\n<enum>{}</enum>", pyjson::to_string(e)));
            }
            out.push_str("\n</parameter>");
        }
    }
    let required: Vec<String> = t
        .parameters
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(|s| format!("`{s}`"))
                .collect()
        })
        .unwrap_or_default();
    if !required.is_empty() {
        out.push_str(&format!("\n<required>[{}]</required>", required.join(", ")));
    }
    out.push_str("\n</parameters>\n</function>");
}

/// Stop strings for a format: a hallucinated tool result or next turn ends generation. Never
/// `</tool_call>`, which would cut parallel calls.
pub fn stop_strings(format: ResolvedFormat) -> Vec<String> {
    match format {
        ResolvedFormat::Hermes | ResolvedFormat::Xml => {
            vec!["<tool_response>".to_string(), "<|im_start|>".to_string()]
        }
        ResolvedFormat::Native => Vec::new(),
    }
}

/// Where a call would open in the format's output: a request that insists on a text answer
/// stops there on a server that cannot be held to text.
pub fn call_stop_strings(format: ResolvedFormat) -> Vec<String> {
    match format {
        ResolvedFormat::Hermes => vec![super::tags::CALL_OPEN.to_string()],
        ResolvedFormat::Xml => vec![
            super::tags::CALL_OPEN.to_string(),
            super::tags::FUNCTION_OPEN.to_string(),
        ],
        ResolvedFormat::Native => Vec::new(),
    }
}

/// The conversation as backend messages. In-band formats: the system prompt gets the tool block,
/// assistant calls are written inline, consecutive tool results share one user turn wrapped in
/// `<tool_response>`, and reasoning is kept only for assistant turns after the last real user
/// turn (the Qwen3 template's rule). Native: `tool_calls` and role `tool` messages.
pub fn render_messages(
    format: ResolvedFormat,
    system: &str,
    tools: &[ToolSpec],
    history: &[HistoryEntry],
) -> Vec<Message> {
    let mut out = Vec::new();
    let block = render_tool_block(format, tools);
    let (shared, own) = system.split_once(SESSION_PART).unwrap_or((system, ""));
    let system_text = [shared, block.as_str(), own]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    if !system_text.is_empty() {
        out.push(Message::system(system_text));
    }
    let last_user = history
        .iter()
        .rposition(|e| matches!(e, HistoryEntry::User { .. }));
    let mut i = 0;
    while i < history.len() {
        let keep_reasoning = last_user.is_none_or(|u| i > u);
        match &history[i] {
            HistoryEntry::User { content } => out.push(Message {
                content: content.clone(),
                ..Message::user("")
            }),
            HistoryEntry::Assistant {
                text,
                reasoning,
                tool_calls,
            } => {
                let reasoning = reasoning
                    .as_deref()
                    .filter(|r| keep_reasoning && !r.trim().is_empty());
                out.push(assistant(format, text, reasoning, tool_calls));
            }
            HistoryEntry::ToolResult { .. } => {
                let end = history[i..]
                    .iter()
                    .position(|e| !matches!(e, HistoryEntry::ToolResult { .. }))
                    .map_or(history.len(), |n| i + n);
                tool_results(format, &history[i..end], &mut out);
                i = end;
                continue;
            }
        }
        i += 1;
    }
    out
}

fn assistant(
    format: ResolvedFormat,
    text: &str,
    reasoning: Option<&str>,
    calls: &[ToolCallRecord],
) -> Message {
    if format == ResolvedFormat::Native {
        let mut m = Message::assistant(text);
        if text.is_empty() {
            m.content.clear();
        }
        m.reasoning = reasoning.map(str::to_string);
        m.tool_calls = calls
            .iter()
            .map(|c| NativeToolCall {
                id: c.id.to_string(),
                name: c.name.clone(),
                arguments: c.arguments.to_string(),
            })
            .collect();
        return m;
    }
    let mut content = String::new();
    let mut text = text;
    if let Some(r) = reasoning {
        content.push_str(&format!("<think>\n{}\n</think>\n\n", r.trim_matches('\n')));
        text = text.trim_start_matches('\n');
    }
    content.push_str(text);
    for (n, call) in calls.iter().enumerate() {
        if n > 0 || !content.is_empty() {
            content.push('\n');
        }
        match format {
            ResolvedFormat::Xml => xml_call(&mut content, call),
            _ => content.push_str(&format!(
                "<tool_call>\n{{\"name\": {}, \"arguments\": {}}}\n</tool_call>",
                pyjson::to_string(&call.name),
                pyjson::to_string(&call.arguments),
            )),
        }
    }
    Message::assistant(content)
}

fn xml_call(out: &mut String, call: &ToolCallRecord) {
    out.push_str(&format!("<tool_call>\n<function={}>\n", call.name));
    if let Some(args) = call.arguments.as_object() {
        for (k, v) in args {
            let v = match v {
                Value::String(s) => s.clone(),
                other => pyjson::to_string(other),
            };
            out.push_str(&format!("<parameter={k}>\n{v}\n</parameter>\n"));
        }
    }
    out.push_str("</function>\n</tool_call>");
}

fn tool_results(format: ResolvedFormat, results: &[HistoryEntry], out: &mut Vec<Message>) {
    let mut joined = Vec::new();
    for r in results {
        if let HistoryEntry::ToolResult {
            call_id, output, ..
        } = r
        {
            if format == ResolvedFormat::Native {
                out.push(Message {
                    tool_call_id: Some(call_id.to_string()),
                    ..Message::text(Role::Tool, output.clone())
                });
            } else {
                joined.push(format!("<tool_response>\n{output}\n</tool_response>"));
            }
        }
    }
    if !joined.is_empty() {
        // One user turn, starting and ending with the wrapper, so the Qwen3 template still
        // tells tool results from real user queries.
        out.push(Message {
            content: vec![ContentPart::text(joined.join("\n"))],
            ..Message::user("")
        });
    }
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;

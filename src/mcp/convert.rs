//! MCP shapes to hearth's: a tool's annotations to a card kind, a call's result to a
//! [`ToolOutput`].

use hearth_conversation::{ToolContent, ToolKind};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents, ToolAnnotations};

use crate::tools::ToolOutput;

/// The card kind for a tool: `read` when the server says the tool only reads, `other`
/// otherwise. Only the icon follows the hint; permissions never do (a hint is the server's
/// claim, not something hearth can check).
pub fn kind_for(annotations: Option<&ToolAnnotations>) -> ToolKind {
    match annotations.and_then(|a| a.read_only_hint) {
        Some(true) => ToolKind::Read,
        _ => ToolKind::Other,
    }
}

/// What the model and the card get from a call's result: the text content, other content
/// described in one line each, structured content when there is nothing else; `failed` when
/// the server flagged the result as an error. The text is capped at `cap` bytes.
pub fn tool_output(result: &CallToolResult, cap: usize) -> ToolOutput {
    let mut parts: Vec<String> = result.content.iter().map(describe).collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    let mut text = parts.join("\n");
    if text.is_empty() {
        text = "(no output)".to_owned();
    }
    let text = cap_text(text, cap);
    ToolOutput {
        content: vec![ToolContent::Text { text: text.clone() }],
        raw_output: serde_json::to_value(result).unwrap_or_default(),
        for_model: text,
        failed: result.is_error.unwrap_or(false),
    }
}

/// One content block as text: text as is, the rest in one line.
fn describe(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => {
            format!("[image: {}, {} bytes base64]", i.mime_type, i.data.len())
        }
        ContentBlock::Audio(a) => {
            format!("[audio: {}, {} bytes base64]", a.mime_type, a.data.len())
        }
        ContentBlock::ResourceLink(r) => format!("[resource link: {} ({})]", r.uri, r.name),
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource: {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[resource: {uri}, {}, {} bytes base64]",
                mime_type.as_deref().unwrap_or("binary"),
                blob.len()
            ),
            _ => format!("[resource of a kind hearth does not know: {}]", json_of(r)),
        },
        _ => format!(
            "[content of a kind hearth does not know: {}]",
            json_of(block)
        ),
    }
}

/// A short JSON rendering, for content hearth cannot describe better.
fn json_of(value: &impl serde::Serialize) -> String {
    let text = serde_json::to_string(value).unwrap_or_default();
    text.chars().take(200).collect()
}

/// `text` cut to at most `cap` bytes (on a character boundary), saying so.
fn cap_text(text: String, cap: usize) -> String {
    if text.len() <= cap {
        return text;
    }
    let mut end = cap;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[output truncated: {} of {} bytes shown]",
        &text[..end],
        end,
        text.len()
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn result(value: serde_json::Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn text_content_becomes_the_output() {
        let out = tool_output(
            &result(json!({"content": [
                {"type": "text", "text": "first"},
                {"type": "text", "text": "second"}
            ]})),
            1000,
        );
        assert_eq!(out.for_model, "first\nsecond");
        assert!(!out.failed);
        assert_eq!(
            out.content,
            vec![ToolContent::Text {
                text: "first\nsecond".into()
            }]
        );
        assert_eq!(out.raw_output["content"][1]["text"], "second");
    }

    #[test]
    fn other_content_is_described_in_one_line() {
        let out = tool_output(
            &result(json!({"content": [
                {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///a.txt", "name": "a"},
                {"type": "resource", "resource": {"uri": "file:///b.txt", "text": "bee"}},
                {"type": "resource", "resource": {"uri": "file:///c.bin", "blob": "AAAA", "mimeType": "application/octet-stream"}}
            ]})),
            1000,
        );
        assert_eq!(
            out.for_model,
            "[image: image/png, 8 bytes base64]\n[audio: audio/wav, 4 bytes base64]\n\
             [resource link: file:///a.txt (a)]\n[resource: file:///b.txt]\nbee\n\
             [resource: file:///c.bin, application/octet-stream, 4 bytes base64]"
        );
    }

    #[test]
    fn error_results_fail_with_the_servers_message() {
        let out = tool_output(
            &result(
                json!({"content": [{"type": "text", "text": "no such repo"}], "isError": true}),
            ),
            1000,
        );
        assert!(out.failed);
        assert_eq!(out.for_model, "no such repo");
    }

    #[test]
    fn structured_or_empty_results_and_the_cap() {
        let out = tool_output(
            &result(json!({"content": [], "structuredContent": {"n": 1}})),
            1000,
        );
        assert_eq!(out.for_model, r#"{"n":1}"#);
        let out = tool_output(&result(json!({"content": []})), 1000);
        assert_eq!(out.for_model, "(no output)");
        let long = "é".repeat(100);
        let out = tool_output(
            &result(json!({"content": [{"type": "text", "text": long}]})),
            51,
        );
        assert!(
            out.for_model.starts_with(&"é".repeat(25)),
            "{}",
            out.for_model
        );
        assert!(
            out.for_model
                .ends_with("[output truncated: 50 of 200 bytes shown]")
        );
    }

    #[test]
    fn kind_follows_the_read_only_hint_only() {
        let read: ToolAnnotations = serde_json::from_value(json!({"readOnlyHint": true})).unwrap();
        let write: ToolAnnotations =
            serde_json::from_value(json!({"readOnlyHint": false, "destructiveHint": true}))
                .unwrap();
        assert_eq!(kind_for(Some(&read)), ToolKind::Read);
        assert_eq!(kind_for(Some(&write)), ToolKind::Other);
        assert_eq!(kind_for(None), ToolKind::Other);
    }
}

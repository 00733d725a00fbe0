//! ACP prompt blocks → the agent's content parts.

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};
use hearth_backend::ContentPart;

/// Converts a prompt. Resource links become a mention the model can act on (it can read the
/// file with its tools); embedded resources carry their text inline; audio is not supported
/// and is named rather than dropped silently.
pub fn prompt_parts(blocks: Vec<ContentBlock>) -> Vec<ContentPart> {
    let mut parts: Vec<ContentPart> = Vec::new();
    for block in blocks {
        let part = match block {
            ContentBlock::Text(t) => ContentPart::text(t.text),
            ContentBlock::Image(i) => ContentPart::Image {
                mime_type: i.mime_type,
                data: i.data,
            },
            ContentBlock::ResourceLink(link) => ContentPart::text(format!("@{}", link.uri)),
            ContentBlock::Resource(res) => match res.resource {
                EmbeddedResourceResource::TextResourceContents(t) => ContentPart::text(format!(
                    "\n<context uri=\"{}\">\n{}\n</context>\n",
                    t.uri, t.text
                )),
                EmbeddedResourceResource::BlobResourceContents(b) => {
                    ContentPart::text(format!("[binary resource {} omitted]", b.uri))
                }
                _ => ContentPart::text("[unsupported resource omitted]"),
            },
            ContentBlock::Audio(_) => ContentPart::text("[audio omitted: not supported]"),
            _ => ContentPart::text("[unsupported content omitted]"),
        };
        // Adjacent text parts merge, so a text-only prompt stays one plain string upstream.
        match (parts.last_mut(), part) {
            (Some(ContentPart::Text { text: prev }), ContentPart::Text { text }) => {
                if !prev.is_empty() && !text.starts_with('\n') {
                    prev.push(' ');
                }
                prev.push_str(&text);
            }
            (_, part) => parts.push(part),
        }
    }
    parts
}

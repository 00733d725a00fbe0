//! Builds the `POST /chat/completions` body from a [`CompletionRequest`].

use hearth_backend::{CompletionRequest, ContentPart, Message, Role};

use crate::wire::{
    ChatRequest, ImageUrl, StreamOptions, WireContent, WireFunction, WireFunctionCall, WireMessage,
    WirePart, WireTool, WireToolCall,
};

/// The streaming request body. `reasoning` is not sent back (servers reject or ignore it) and
/// `context_window` is not sent (OpenAI-compatible servers have no per-request field for it).
pub(crate) fn chat_body(request: &CompletionRequest) -> ChatRequest<'_> {
    ChatRequest {
        model: &request.model,
        messages: request.messages.iter().map(message).collect(),
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        tools: tools(request),
        tool_choice: match (
            request.tools.is_empty(),
            request.answer_only,
            request.call_first,
        ) {
            (false, true, _) => Some("none"),
            (false, false, true) => Some("required"),
            _ => None,
        },
        max_tokens: request.max_tokens,
        temperature: request.temperature,
        stop: &request.stop,
    }
}

/// The request's tools in OpenAI's `tools` shape (Ollama's native API takes the same).
pub(crate) fn tools(request: &CompletionRequest) -> Vec<WireTool<'_>> {
    request
        .tools
        .iter()
        .map(|tool| WireTool {
            kind: "function",
            function: WireFunction {
                name: &tool.name,
                description: &tool.description,
                parameters: &tool.parameters,
            },
        })
        .collect()
}

fn message(message: &Message) -> WireMessage<'_> {
    let tool_calls: Vec<WireToolCall<'_>> = message
        .tool_calls
        .iter()
        .map(|call| WireToolCall {
            id: &call.id,
            kind: "function",
            function: WireFunctionCall {
                name: &call.name,
                arguments: &call.arguments,
            },
        })
        .collect();
    let content = if message.has_images() {
        Some(WireContent::Parts(
            message.content.iter().map(part).collect(),
        ))
    } else {
        let text = message.plain_text();
        // OpenAI's convention for an assistant turn that only called tools is `content: null`.
        (!text.is_empty() || tool_calls.is_empty()).then_some(WireContent::Text(text))
    };
    WireMessage {
        role: role(message.role),
        content,
        tool_calls,
        tool_call_id: message.tool_call_id.as_deref(),
    }
}

fn part(part: &ContentPart) -> WirePart<'_> {
    match part {
        ContentPart::Text { text } => WirePart::Text { text },
        ContentPart::Image { mime_type, data } => WirePart::ImageUrl {
            image_url: ImageUrl {
                url: format!("data:{mime_type};base64,{data}"),
            },
        },
    }
}

pub(crate) fn role(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

#[cfg(test)]
mod tests {
    use hearth_backend::{NativeToolCall, ToolSpec};
    use serde_json::json;

    use super::*;

    fn to_json(request: &CompletionRequest) -> serde_json::Value {
        serde_json::to_value(chat_body(request)).unwrap()
    }

    #[test]
    fn minimal_request_omits_optional_fields() {
        let request = CompletionRequest::new("m", vec![Message::user("hi")]);
        assert_eq!(
            to_json(&request),
            json!({
                "model": "m",
                "messages": [{"role": "user", "content": "hi"}],
                "stream": true,
                "stream_options": {"include_usage": true},
            })
        );
    }

    #[test]
    fn every_message_shape_and_option_is_rendered() {
        let mut assistant = Message::assistant("");
        assistant.reasoning = Some("secret thoughts".into());
        assistant.tool_calls = vec![NativeToolCall {
            id: "c1".into(),
            name: "read".into(),
            arguments: r#"{"p":1}"#.into(),
        }];
        let mut tool = Message::text(Role::Tool, "result");
        tool.tool_call_id = Some("c1".into());
        let mut user = Message::user("look");
        user.content.push(ContentPart::Image {
            mime_type: "image/png".into(),
            data: "AAAA".into(),
        });
        let mut request =
            CompletionRequest::new("m", vec![Message::system("sys"), user, assistant, tool]);
        request.tools = vec![ToolSpec {
            name: "read".into(),
            description: "reads".into(),
            parameters: json!({"type": "object"}),
        }];
        request.max_tokens = Some(64);
        request.temperature = Some(0.5);
        request.stop = vec!["END".into()];
        request.context_window = Some(8192);

        let body = to_json(&request);
        assert_eq!(body["max_tokens"], 64);
        assert_eq!(body["temperature"], 0.5);
        assert_eq!(body["stop"], json!(["END"]));
        assert!(body.get("context_window").is_none());
        assert_eq!(
            body["tools"],
            json!([{"type": "function", "function": {
                "name": "read", "description": "reads", "parameters": {"type": "object"}}}])
        );
        assert_eq!(
            body["messages"],
            json!([
                {"role": "system", "content": "sys"},
                {"role": "user", "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                ]},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function",
                     "function": {"name": "read", "arguments": "{\"p\":1}"}},
                ]},
                {"role": "tool", "content": "result", "tool_call_id": "c1"},
            ])
        );
        assert!(!body.to_string().contains("secret thoughts"));
        assert!(body.get("tool_choice").is_none(), "the model chooses");

        request.call_first = true;
        assert_eq!(to_json(&request)["tool_choice"], "required");
        request.call_first = false;
        request.answer_only = true;
        assert_eq!(to_json(&request)["tool_choice"], "none");
        request.tools.clear();
        let body = to_json(&request);
        assert!(
            body.get("tool_choice").is_none(),
            "no tools, nothing to refuse"
        );
    }
}

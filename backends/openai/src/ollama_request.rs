//! Builds the body of Ollama's native `POST /api/chat` from a [`CompletionRequest`] that
//! carries a context window.

use std::collections::HashMap;

use hearth_backend::{CompletionRequest, ContentPart, Message, NativeToolCall, Role};
use serde_json::Value;

use crate::ollama_wire::{
    OllamaChat, OllamaFunctionCall, OllamaMessage, OllamaOptions, OllamaToolCall,
};
use crate::request::{role, tools};

/// The streaming request body, `options.num_ctx` set to `num_ctx`. Reasoning of earlier
/// assistant turns is not sent back, as on the OpenAI path.
pub(crate) fn ollama_body(request: &CompletionRequest, num_ctx: u32) -> OllamaChat<'_> {
    // Ollama matches a tool result to its call by tool name, not by id: find each id's name.
    let names: HashMap<&str, &str> = request
        .messages
        .iter()
        .flat_map(|m| &m.tool_calls)
        .map(|call| (call.id.as_str(), call.name.as_str()))
        .collect();
    OllamaChat {
        model: &request.model,
        messages: request
            .messages
            .iter()
            .map(|m| message(m, &names))
            .collect(),
        stream: true,
        options: OllamaOptions {
            num_ctx,
            num_predict: request.max_tokens,
            temperature: request.temperature,
            stop: &request.stop,
        },
        tools: tools(request),
    }
}

fn message<'a>(message: &'a Message, names: &HashMap<&str, &'a str>) -> OllamaMessage<'a> {
    let tool_name = match (message.role, message.tool_call_id.as_deref()) {
        (Role::Tool, Some(id)) => names.get(id).copied(),
        _ => None,
    };
    OllamaMessage {
        role: role(message.role),
        content: message.plain_text(),
        images: message
            .content
            .iter()
            .filter_map(|part| match part {
                ContentPart::Image { data, .. } => Some(data.as_str()),
                ContentPart::Text { .. } => None,
            })
            .collect(),
        tool_calls: message.tool_calls.iter().map(tool_call).collect(),
        tool_name,
    }
}

fn tool_call(call: &NativeToolCall) -> OllamaToolCall<'_> {
    OllamaToolCall {
        function: OllamaFunctionCall {
            name: &call.name,
            arguments: arguments(call),
        },
    }
}

/// Ollama wants the arguments as a JSON object and rejects the whole request otherwise, so
/// arguments the model wrote malformed (or as a non-object) go back as `{}`: the tool result
/// that follows already told the model what went wrong.
fn arguments(call: &NativeToolCall) -> Value {
    match serde_json::from_str::<Value>(&call.arguments) {
        Ok(object @ Value::Object(_)) => object,
        _ => {
            tracing::debug!(call_id = %call.id, "tool-call arguments are not a JSON object; sending {{}}");
            Value::Object(serde_json::Map::new())
        }
    }
}

#[cfg(test)]
mod tests {
    use hearth_backend::ToolSpec;
    use serde_json::json;

    use super::*;

    fn to_json(request: &CompletionRequest, num_ctx: u32) -> Value {
        serde_json::to_value(ollama_body(request, num_ctx)).unwrap()
    }

    #[test]
    fn minimal_request_sends_num_ctx_and_nothing_optional() {
        let request = CompletionRequest::new("qwen", vec![Message::user("hi")]);
        assert_eq!(
            to_json(&request, 4096),
            json!({
                "model": "qwen",
                "messages": [{"role": "user", "content": "hi"}],
                "stream": true,
                "options": {"num_ctx": 4096},
            })
        );
    }

    #[test]
    fn every_message_shape_and_option_is_rendered_natively() {
        let mut assistant = Message::assistant("let me look");
        assistant.reasoning = Some("secret thoughts".into());
        assistant.tool_calls = vec![
            NativeToolCall {
                id: "c1".into(),
                name: "read".into(),
                arguments: r#"{"path":"a.rs"}"#.into(),
            },
            NativeToolCall {
                id: "c2".into(),
                name: "grep".into(),
                arguments: "{not json".into(),
            },
        ];
        let mut read_result = Message::text(Role::Tool, "fn main() {}");
        read_result.tool_call_id = Some("c1".into());
        let mut unknown_result = Message::text(Role::Tool, "orphan");
        unknown_result.tool_call_id = Some("zz".into());
        let mut user = Message::user("look");
        user.content.push(ContentPart::Image {
            mime_type: "image/png".into(),
            data: "AAAA".into(),
        });
        let messages = vec![
            Message::system("sys"),
            user,
            assistant,
            read_result,
            unknown_result,
        ];
        let mut request = CompletionRequest::new("qwen", messages);
        request.tools = vec![ToolSpec {
            name: "read".into(),
            description: "reads".into(),
            parameters: json!({"type": "object"}),
        }];
        request.max_tokens = Some(64);
        request.temperature = Some(0.5);
        request.stop = vec!["END".into()];

        let body = to_json(&request, 8192);
        assert_eq!(
            body["options"],
            json!({"num_ctx": 8192, "num_predict": 64, "temperature": 0.5, "stop": ["END"]})
        );
        assert_eq!(
            body["tools"],
            json!([{"type": "function", "function": {
                "name": "read", "description": "reads", "parameters": {"type": "object"}}}])
        );
        assert_eq!(
            body["messages"],
            json!([
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "look", "images": ["AAAA"]},
                {"role": "assistant", "content": "let me look", "tool_calls": [
                    {"function": {"name": "read", "arguments": {"path": "a.rs"}}},
                    {"function": {"name": "grep", "arguments": {}}},
                ]},
                {"role": "tool", "content": "fn main() {}", "tool_name": "read"},
                {"role": "tool", "content": "orphan"},
            ])
        );
        assert!(!body.to_string().contains("secret thoughts"));
        assert!(body.get("stream_options").is_none());
    }
}

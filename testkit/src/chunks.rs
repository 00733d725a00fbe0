//! Builders of OpenAI `chat.completion.chunk` SSE frames.

use serde_json::{Value, json};

/// The end-of-stream frame OpenAI-compatible servers send last.
pub const DONE: &str = "data: [DONE]\n\n";

/// The model name the builders put in every chunk.
pub const FAKE_MODEL: &str = "fake-model";

/// One SSE frame carrying `payload` as its data: `data: {payload}\n\n`.
pub fn data_frame(payload: &Value) -> String {
    format!("data: {payload}\n\n")
}

fn chunk(choices: Value, usage: Option<Value>) -> String {
    let mut body = json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": FAKE_MODEL,
        "choices": choices,
    });
    if let (Some(usage), Some(obj)) = (usage, body.as_object_mut()) {
        obj.insert("usage".to_string(), usage);
    }
    data_frame(&body)
}

/// A chunk with one choice whose `delta` is exactly `delta` and no finish reason.
pub fn chunk_delta(delta: Value) -> String {
    chunk(
        json!([{ "index": 0, "delta": delta, "finish_reason": null }]),
        None,
    )
}

/// The first chunk servers send: `delta: {"role": "assistant", "content": ""}`.
pub fn chunk_role() -> String {
    chunk_delta(json!({ "role": "assistant", "content": "" }))
}

/// A visible-text delta (`delta.content`).
pub fn chunk_content(text: &str) -> String {
    chunk_delta(json!({ "content": text }))
}

/// A reasoning delta as vLLM/SGLang/llama.cpp send it (`delta.reasoning_content`).
pub fn chunk_reasoning(text: &str) -> String {
    chunk_reasoning_as("reasoning_content", text)
}

/// A reasoning delta under another field name, e.g. `"reasoning"` (OpenRouter, Ollama).
pub fn chunk_reasoning_as(field: &str, text: &str) -> String {
    let mut delta = serde_json::Map::new();
    delta.insert(field.to_string(), Value::String(text.to_string()));
    chunk_delta(Value::Object(delta))
}

/// One `delta.tool_calls` entry. Servers send `id` and `name` with the first fragment of a
/// call and only `index` plus argument fragments afterwards.
pub fn chunk_tool_call(
    index: u32,
    id: Option<&str>,
    name: Option<&str>,
    args_fragment: &str,
) -> String {
    let mut call = json!({ "index": index, "function": { "arguments": args_fragment } });
    if let Some(obj) = call.as_object_mut() {
        if let Some(id) = id {
            obj.insert("id".to_string(), json!(id));
            obj.insert("type".to_string(), json!("function"));
        }
        if let (Some(name), Some(function)) =
            (name, obj.get_mut("function").and_then(Value::as_object_mut))
        {
            function.insert("name".to_string(), json!(name));
        }
    }
    chunk_delta(json!({ "tool_calls": [call] }))
}

/// A chunk with an empty delta and `finish_reason: reason`.
pub fn chunk_finish(reason: &str) -> String {
    chunk(
        json!([{ "index": 0, "delta": {}, "finish_reason": reason }]),
        None,
    )
}

/// The usage chunk `stream_options.include_usage` asks for: empty `choices`, `usage` set.
pub fn chunk_usage(prompt: u32, completion: u32) -> String {
    chunk(
        json!([]),
        Some(json!({
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        })),
    )
}

//! Builders of the NDJSON lines Ollama's native `POST /api/chat` streams: one JSON object and a
//! newline each.

use serde_json::{Value, json};

use crate::chunks::FAKE_MODEL;

/// `payload` as one NDJSON line: `{json}\n`.
pub fn ndjson_line(payload: &Value) -> String {
    format!("{payload}\n")
}

/// A `done: false` line whose `message` is `message` (give it `content`, `thinking`,
/// `tool_calls` as needed; `role` is added when missing).
pub fn ollama_message(message: Value) -> String {
    let mut message = message;
    if let Some(obj) = message.as_object_mut() {
        obj.entry("role").or_insert_with(|| json!("assistant"));
    }
    ndjson_line(&json!({
        "model": FAKE_MODEL,
        "created_at": "2026-01-01T00:00:00Z",
        "message": message,
        "done": false,
    }))
}

/// A line carrying visible text (`message.content`).
pub fn ollama_content(text: &str) -> String {
    ollama_message(json!({ "content": text }))
}

/// A line carrying reasoning (`message.thinking`), with empty content as Ollama sends it.
pub fn ollama_thinking(text: &str) -> String {
    ollama_message(json!({ "content": "", "thinking": text }))
}

/// A line with one whole tool call; `arguments` is a JSON object, as Ollama sends it.
pub fn ollama_tool_call(name: &str, arguments: Value) -> String {
    ollama_message(json!({
        "content": "",
        "tool_calls": [{ "function": { "name": name, "arguments": arguments } }],
    }))
}

/// The last line: `done: true`, `done_reason: reason` and the token counts.
pub fn ollama_done(reason: &str, prompt_eval_count: u32, eval_count: u32) -> String {
    ndjson_line(&json!({
        "model": FAKE_MODEL,
        "created_at": "2026-01-01T00:00:01Z",
        "message": { "role": "assistant", "content": "" },
        "done": true,
        "done_reason": reason,
        "total_duration": 1_000_000,
        "prompt_eval_count": prompt_eval_count,
        "eval_count": eval_count,
    }))
}

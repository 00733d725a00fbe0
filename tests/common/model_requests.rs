//! What hearth sent the model: the chat-completions requests a `FakeServer` recorded, and the
//! parts of their bodies tests look at (tool messages, offered tools, call ids).

use hearth_testkit::{FakeServer, Recorded};
use serde_json::Value;

/// The recorded `POST /chat/completions` requests, in order.
pub fn chat_requests(server: &FakeServer) -> Vec<Recorded> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect()
}

/// Where the reminder of the task starts in the last tool result (the restate_task assist).
pub const REMINDER: &str = "\n\n(My request was: ";

/// A tool message's content without the reminder of the task that may follow it.
pub fn without_reminder(content: &str) -> String {
    content
        .split_once(REMINDER)
        .map_or(content, |(result, _)| result)
        .to_string()
}

/// The content of the `tool` message answering `call_id` in a request body, without the
/// reminder of the task.
pub fn tool_message(body: &Value, call_id: &str) -> String {
    let content = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .unwrap_or_else(|| panic!("no tool message for {call_id} in {body:#}"))["content"]
        .as_str()
        .unwrap()
        .to_string();
    without_reminder(&content)
}

/// The content of the `tool` message answering the first call of tool `name` in a request
/// body (hearth gives calls its own ids, so the call is found by its name).
pub fn tool_message_by_name(body: &Value, name: &str) -> String {
    let id = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .find(|c| c["function"]["name"] == name)
        .unwrap_or_else(|| panic!("no call of {name} in {body:#}"))["id"]
        .as_str()
        .unwrap()
        .to_string();
    tool_message(body, &id)
}

/// The ids of every tool call in the assistant messages of a request body, in order.
pub fn call_ids(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect()
}

/// The names of the tools a request body offered the model.
pub fn offered_tools(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

//! Streaming parsers for model output: think routing, tool calls (Hermes JSON and Qwen3-Coder
//! XML) with repair, and the renderers for the tool prompt. Knows nothing of ACP or HTTP.

mod block;
mod config;
mod corrective;
mod event;
mod function_tags;
mod native;
mod normalize;
mod prose_calls;
mod pyjson;
mod render;
mod repair;
mod schema;
mod stream;
mod tags;
#[cfg(test)]
mod test_support;
mod tool_format;
mod xml;

pub use config::{
    ParserConfig, ResolvedFormat, TextCalls, ThinkStart, resolve_format, think_start_for,
};
pub use corrective::{MAX_MALFORMED_ROUNDS, corrective_message, give_up_message};
pub use event::{Malformed, MalformedReason, ParseEvent, ParsedCall, Repair, StreamEnd};
pub use native::repair_native_call;
pub use render::{
    SESSION_PART, call_stop_strings, render_messages, render_tool_block, stop_strings,
};
pub use stream::StreamParser;
pub use tool_format::ToolFormat;

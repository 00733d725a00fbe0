//! Streaming parsers for model output: think routing, tool calls (Hermes JSON and Qwen3-Coder
//! XML) with repair, and the renderers for the tool prompt. Knows nothing of ACP or HTTP.

mod tool_format;

pub use tool_format::ToolFormat;

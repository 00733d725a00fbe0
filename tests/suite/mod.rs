mod acp_binary;
mod acp_session;
mod acp_tools;
mod batch;
mod hostile_input;
mod qwen_inband;
mod repl;
mod sessions;

mod acp_binary;
mod acp_session;
mod hostile_input;
mod repl;

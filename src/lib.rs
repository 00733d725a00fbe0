//! hearth: a coding agent for open models. The binary's front ends (ACP, REPL, batch) share
//! this library's agent core.

pub mod acp;
pub mod agent;
pub mod batch;
pub mod cli;
pub mod config;
pub mod context;
pub mod endpoints;
pub mod eval;
pub mod host;
pub mod logging;
pub mod mcp;
pub mod parse;
pub mod repl;
pub mod shutdown;
pub mod slash;
pub mod store;
pub mod sync;
pub mod text_safety;
pub mod tools;

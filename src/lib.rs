//! hearth: a coding agent for open models. The binary's front ends (ACP, REPL, batch) share
//! this library's agent core.

pub mod agent;
pub mod parse;
pub mod tools;

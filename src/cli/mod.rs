//! The command line: hearth's arguments and subcommands, and the subcommands that are only a
//! command-line view of a library module (`hearth parse`, `hearth sessions`).

mod args;
pub mod parse;
pub mod pull;
pub mod sessions;

pub use args::{Cli, CliCommand, ENGINE_WORKER, ModelAction};

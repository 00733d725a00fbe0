//! `hearth repl`: the agent in a terminal. A line editor with history, answers streamed as
//! they come, reasoning dimmed, one-line tool cards, permission questions at the prompt,
//! slash commands. Files and commands run on this machine through `LocalClientOps`; without a
//! terminal it reads lines from stdin and writes plain text, so it can be scripted.

mod actions;
mod args;
mod commands;
mod diff;
mod error;
mod front;
mod input;
mod render;
#[allow(clippy::module_inception, reason = "the loop of the repl module")]
mod repl;
mod screen;
mod sessions;
mod style;

pub use args::ReplArgs;
pub use commands::{CommandError, Entry, ReplCommand, parse_answer, parse_line};
pub use error::ReplError;
pub use render::Renderer;
pub use repl::run;
pub use sessions::{Reopened, SessionsError, Stored};
pub use style::Style;

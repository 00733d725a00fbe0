//! `hearth run`: headless prompting — one prompt, stdin, or a batch file — with text, JSON or
//! streamed JSON out. Same agent core, tools, modes and config as the editor.

mod args;
mod client;
mod exit;
mod jobs;
mod progress;
mod report;
mod run;

pub use args::{OutputFormat, RunArgs};
pub use exit::RunExit;
pub use progress::BatchProgress;
pub use run::run;

//! What the user types at the prompt: a prompt for the model, or a slash command; and the
//! answer to a permission question. Pure parsers, no I/O.

use hearth_conversation::{Mode, PermissionAnswer, UnknownMode};

use crate::slash::{self, CommandInfo, SlashCommand, SlashError};

/// One slash command: a shared one, or one only the REPL has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplCommand {
    /// A command every front end offers (`/mode`, `/model`, `/compact`, `/clear`, `/context`,
    /// `/help`); a `/mode` id has been checked.
    Shared(SlashCommand),
    /// `/new`: a fresh session with the same settings.
    New,
    /// `/thoughts`: show or hide the model's reasoning.
    Thoughts,
    /// `/diff`: the last full diff.
    Diff,
    /// `/sessions`: the stored sessions of this directory.
    Sessions,
    /// `/resume [id]`: reopen a stored session.
    Resume(Option<String>),
    Quit,
}

/// One line of input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// Nothing but whitespace.
    Blank,
    /// Text for the model.
    Prompt(String),
    Command(ReplCommand),
}

/// A slash command that cannot be run. The REPL shows the message and waits for the next line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// No command has this name; the message points to /help.
    #[error("unknown command `/{0}` (try /help)")]
    Unknown(String),
    /// `/mode` named a mode that does not exist; the message lists the real ones.
    #[error(transparent)]
    Mode(#[from] UnknownMode),
    /// Arguments the command does not take.
    #[error(transparent)]
    Arguments(#[from] SlashError),
}

/// The commands only the REPL has, in `/help` order (after the shared ones).
pub const REPL_COMMANDS: &[CommandInfo] = &[
    CommandInfo {
        name: "new",
        argument: None,
        description: "Start a new session with the same mode and model",
        hint: None,
    },
    CommandInfo {
        name: "thoughts",
        argument: None,
        description: "Show or hide the model's reasoning",
        hint: None,
    },
    CommandInfo {
        name: "diff",
        argument: None,
        description: "Show the last file change in full",
        hint: None,
    },
    CommandInfo {
        name: "sessions",
        argument: None,
        description: "List the stored sessions of this directory",
        hint: None,
    },
    CommandInfo {
        name: "resume",
        argument: Some("[id]"),
        description: "Reopen a stored session",
        hint: None,
    },
    CommandInfo {
        name: "quit",
        argument: None,
        description: "Leave (Ctrl-D does the same)",
        hint: None,
    },
];

/// Parses one line. A line starting with `//` is a prompt starting with `/`; so is a line whose
/// first word is a path (`/etc/hosts: what is this?`).
pub fn parse_line(line: &str) -> Result<Entry, CommandError> {
    let text = line.trim();
    if text.is_empty() {
        return Ok(Entry::Blank);
    }
    if let Some(escaped) = text.strip_prefix("//") {
        return Ok(Entry::Prompt(format!("/{escaped}")));
    }
    let Some(line) = slash::split(text) else {
        return Ok(Entry::Prompt(text.to_owned()));
    };
    if let Some(shared) = SlashCommand::parse(&line) {
        let shared = shared?;
        if let SlashCommand::Mode(Some(id)) = &shared {
            id.parse::<Mode>()?;
        }
        return Ok(Entry::Command(ReplCommand::Shared(shared)));
    }
    let command = match line.name {
        "resume" => ReplCommand::Resume(line.at_most_one()?),
        "new" => line.no_argument(ReplCommand::New)?,
        "thoughts" => line.no_argument(ReplCommand::Thoughts)?,
        "diff" => line.no_argument(ReplCommand::Diff)?,
        "sessions" => line.no_argument(ReplCommand::Sessions)?,
        "quit" | "exit" => ReplCommand::Quit,
        other => return Err(CommandError::Unknown(other.to_owned())),
    };
    Ok(Entry::Command(command))
}

/// The question's choices, as shown.
pub const ANSWER_CHOICES: &str = "[y]es / [a]lways / [n]o / always [N]o";

/// Parses an answer to a permission question; `None` asks again. `n` and `N` differ: the
/// capital refuses for the rest of the session.
pub fn parse_answer(line: &str) -> Option<PermissionAnswer> {
    match line.trim() {
        "y" | "Y" | "yes" | "Yes" | "YES" => Some(PermissionAnswer::AllowOnce),
        "a" | "A" | "always" | "Always" => Some(PermissionAnswer::AllowAlways),
        "n" | "no" | "No" => Some(PermissionAnswer::RejectOnce),
        "N" | "NO" | "never" | "Never" => Some(PermissionAnswer::RejectAlways),
        _ => None,
    }
}

#[cfg(test)]
#[path = "commands_tests.rs"]
mod tests;

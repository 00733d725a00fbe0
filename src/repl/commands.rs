//! What the user types at the prompt: a prompt for the model, or a slash command; and the
//! answer to a permission question. Pure parsers, no I/O.

use crate::agent::{Mode, PermissionAnswer, UnknownMode};

/// One slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlashCommand {
    /// `/mode [id]`: show the modes, or switch.
    Mode(Option<Mode>),
    /// `/model [id]`: list the models, or switch.
    Model(Option<String>),
    /// `/new`: a fresh session with the same settings.
    New,
    /// `/thoughts`: show or hide the model's reasoning.
    Thoughts,
    /// `/diff`: the last full diff.
    Diff,
    /// `/compact [focus]`: summarise the conversation now.
    Compact(Option<String>),
    /// `/clear`: the model starts afresh in the same session.
    Clear,
    /// `/context`: how full the context window is.
    Context,
    /// `/sessions`: the stored sessions of this directory.
    Sessions,
    /// `/resume [id]`: reopen a stored session.
    Resume(Option<String>),
    Help,
    Quit,
}

/// One line of input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// Nothing but whitespace.
    Blank,
    /// Text for the model.
    Prompt(String),
    Command(SlashCommand),
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
    /// A command that takes no argument was given one.
    #[error("/{0} takes no argument")]
    NoArgument(&'static str),
    /// A command that takes one argument was given several.
    #[error("/{0} takes at most one argument")]
    OneArgument(&'static str),
}

/// Every command with its one-line help, in `/help` order.
pub const COMMANDS: &[(&str, &str)] = &[
    (
        "/mode [id]",
        "show the modes, or switch to one (ask, accept-edits, plan, bypass)",
    ),
    ("/model [id]", "list the models, or switch to one"),
    ("/new", "start a new session with the same mode and model"),
    ("/thoughts", "show or hide the model's reasoning"),
    ("/diff", "show the last file change in full"),
    (
        "/compact [focus]",
        "summarise the conversation so far to free context",
    ),
    (
        "/clear",
        "start a new context in this session (the history stays saved)",
    ),
    (
        "/context",
        "how full the context window is, and what was left out",
    ),
    ("/sessions", "list the stored sessions of this directory"),
    ("/resume [id]", "reopen a stored session"),
    ("/help", "this list"),
    ("/quit", "leave (Ctrl-D does the same)"),
];

/// Parses one line. A line starting with `//` is a prompt starting with `/`; so is a line whose
/// first word is a path (`/etc/hosts: what is this?`).
pub fn parse_line(line: &str) -> Result<Entry, CommandError> {
    let text = line.trim();
    if text.is_empty() {
        return Ok(Entry::Blank);
    }
    let Some(rest) = text.strip_prefix('/') else {
        return Ok(Entry::Prompt(text.to_owned()));
    };
    let mut words = rest.split_whitespace();
    let name = words.next().unwrap_or_default();
    if rest.starts_with('/') || name.contains('/') || name.is_empty() {
        let prompt = if rest.starts_with('/') { rest } else { text };
        return Ok(Entry::Prompt(prompt.to_owned()));
    }
    let args: Vec<&str> = words.collect();
    let command = match name {
        "mode" => SlashCommand::Mode(one(&args, "mode")?.map(str::parse).transpose()?),
        "model" => SlashCommand::Model(one(&args, "model")?.map(str::to_owned)),
        "resume" => SlashCommand::Resume(one(&args, "resume")?.map(str::to_owned)),
        "new" => none(&args, "new", SlashCommand::New)?,
        "thoughts" => none(&args, "thoughts", SlashCommand::Thoughts)?,
        "diff" => none(&args, "diff", SlashCommand::Diff)?,
        "compact" => SlashCommand::Compact((!args.is_empty()).then(|| args.join(" "))),
        "clear" => none(&args, "clear", SlashCommand::Clear)?,
        "context" => none(&args, "context", SlashCommand::Context)?,
        "sessions" => none(&args, "sessions", SlashCommand::Sessions)?,
        "help" | "?" => SlashCommand::Help,
        "quit" | "exit" => SlashCommand::Quit,
        other => return Err(CommandError::Unknown(other.to_owned())),
    };
    Ok(Entry::Command(command))
}

fn one<'a>(args: &[&'a str], command: &'static str) -> Result<Option<&'a str>, CommandError> {
    match args {
        [] => Ok(None),
        [arg] => Ok(Some(arg)),
        _ => Err(CommandError::OneArgument(command)),
    }
}

fn none(
    args: &[&str],
    command: &'static str,
    parsed: SlashCommand,
) -> Result<SlashCommand, CommandError> {
    if args.is_empty() {
        Ok(parsed)
    } else {
        Err(CommandError::NoArgument(command))
    }
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

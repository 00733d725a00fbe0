//! The slash-command grammar, and the commands every front end offers over a session: Zed gets
//! them as `available_commands_update` and sends them as prompts; the REPL reads them from its
//! line and adds its own (`/new`, `/diff`, …) with the same grammar ([`SlashLine`]).

/// A line split into a slash command's name and its argument words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlashLine<'a> {
    pub name: &'a str,
    pub words: Vec<&'a str>,
}

/// Splits `text` into a command name and its words. `None` when the line is not a command: no
/// leading `/`, an escaped `//`, or a first word that is a path (`/etc/hosts: what is this?`).
pub fn split(text: &str) -> Option<SlashLine<'_>> {
    let rest = text.trim().strip_prefix('/')?;
    let mut words = rest.split_whitespace();
    let name = words.next()?;
    if rest.starts_with('/') || name.contains('/') {
        return None;
    }
    Some(SlashLine {
        name,
        words: words.collect(),
    })
}

impl SlashLine<'_> {
    /// `parsed` if the command was given no argument.
    pub fn no_argument<T>(&self, parsed: T) -> Result<T, SlashError> {
        match self.words.as_slice() {
            [] => Ok(parsed),
            _ => Err(SlashError::NoArgument(self.name.to_owned())),
        }
    }

    /// The one optional argument.
    pub fn at_most_one(&self) -> Result<Option<String>, SlashError> {
        match self.words.as_slice() {
            [] => Ok(None),
            [word] => Ok(Some((*word).to_owned())),
            _ => Err(SlashError::OneArgument(self.name.to_owned())),
        }
    }

    /// Every argument word as one text, single-spaced; `None` without arguments.
    pub fn rest(&self) -> Option<String> {
        (!self.words.is_empty()).then(|| self.words.join(" "))
    }
}

/// A command line that names a command but cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SlashError {
    /// A command that takes no argument was given one.
    #[error("/{0} takes no argument")]
    NoArgument(String),
    /// A command that takes one word was given several.
    #[error("/{0} takes at most one argument")]
    OneArgument(String),
}

/// One of the commands every front end offers, with its argument, as typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlashCommand {
    /// `/compact [focus]`: summarise the conversation now.
    Compact {
        focus: Option<String>,
    },
    /// `/clear`: the model starts afresh; the session and its history stay.
    Clear,
    /// `/mode [id]`: list the modes, or switch.
    Mode(Option<String>),
    /// `/model [id]`: list the models, or switch.
    Model(Option<String>),
    /// `/context`: what the window holds and what was left out.
    Context,
    Help,
}

impl SlashCommand {
    /// Reads `line` as a shared command. `None` when its name is not one (a front end may have
    /// its own commands, or treat the line as a prompt).
    pub fn parse(line: &SlashLine<'_>) -> Option<Result<Self, SlashError>> {
        Some(match line.name {
            "compact" => Ok(SlashCommand::Compact { focus: line.rest() }),
            "clear" => line.no_argument(SlashCommand::Clear),
            "mode" => line.at_most_one().map(SlashCommand::Mode),
            "model" => line.at_most_one().map(SlashCommand::Model),
            "context" => line.no_argument(SlashCommand::Context),
            "help" | "?" => Ok(SlashCommand::Help),
            _ => return None,
        })
    }
}

/// Reads `text` as a shared command. `None` when it is not one (a prompt, or a command only
/// some front end has), so the caller treats it as it would otherwise.
pub fn parse_command(text: &str) -> Option<Result<SlashCommand, SlashError>> {
    SlashCommand::parse(&split(text)?)
}

/// A command as a help list or the editor shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandInfo {
    pub name: &'static str,
    /// The argument as a usage line writes it (`[id]`), when it takes one.
    pub argument: Option<&'static str>,
    pub description: &'static str,
    /// What the argument is, for the editor's input hint.
    pub hint: Option<&'static str>,
}

impl CommandInfo {
    /// `/name [arg]`.
    pub fn usage(&self) -> String {
        match self.argument {
            Some(arg) => format!("/{} {arg}", self.name),
            None => format!("/{}", self.name),
        }
    }
}

/// Every shared command, in `/help` order.
pub const COMMANDS: &[CommandInfo] = &[
    CommandInfo {
        name: "compact",
        argument: Some("[focus]"),
        description: "Summarise the conversation so far to free context",
        hint: Some("what the summary should focus on (optional)"),
    },
    CommandInfo {
        name: "clear",
        argument: None,
        description: "Start a new context in this session (the history stays saved)",
        hint: None,
    },
    CommandInfo {
        name: "mode",
        argument: Some("[id]"),
        description: "Show the modes, or switch: ask, accept-edits, plan, bypass",
        hint: Some("mode id (optional)"),
    },
    CommandInfo {
        name: "model",
        argument: Some("[id]"),
        description: "List the models, or switch to one",
        hint: Some("model id (optional)"),
    },
    CommandInfo {
        name: "context",
        argument: None,
        description: "How full the context window is, and what was left out",
        hint: None,
    },
    CommandInfo {
        name: "help",
        argument: None,
        description: "The commands hearth understands",
        hint: None,
    },
];

/// `/help` as Markdown lines.
pub fn help_text() -> String {
    COMMANDS
        .iter()
        .map(|c| match c.hint {
            Some(_) => format!("- `/{} …` — {}\n", c.name, c.description),
            None => format!("- `/{}` — {}\n", c.name, c.description),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_commands_parse_and_others_pass_through() {
        assert_eq!(
            parse_command("/compact  the parser  work "),
            Some(Ok(SlashCommand::Compact {
                focus: Some("the parser work".into())
            }))
        );
        assert_eq!(
            parse_command("/compact"),
            Some(Ok(SlashCommand::Compact { focus: None }))
        );
        assert_eq!(parse_command("/clear"), Some(Ok(SlashCommand::Clear)));
        assert_eq!(
            parse_command("/mode plan"),
            Some(Ok(SlashCommand::Mode(Some("plan".into()))))
        );
        assert_eq!(parse_command("/model"), Some(Ok(SlashCommand::Model(None))));
        assert_eq!(parse_command("/context"), Some(Ok(SlashCommand::Context)));
        assert_eq!(parse_command("/?"), Some(Ok(SlashCommand::Help)));
        assert_eq!(
            parse_command("/context now"),
            Some(Err(SlashError::NoArgument("context".into())))
        );
        assert_eq!(
            parse_command("/mode a b"),
            Some(Err(SlashError::OneArgument("mode".into())))
        );
        assert_eq!(parse_command("/etc/hosts: what is this?"), None);
        assert_eq!(parse_command("//mode"), None);
        assert_eq!(parse_command("/"), None);
        assert_eq!(parse_command("explain /compact"), None);
        assert_eq!(parse_command("/sessions"), None);
    }

    #[test]
    fn help_lists_every_command_and_each_parses() {
        let help = help_text();
        for command in COMMANDS {
            assert!(help.contains(&format!("/{}", command.name)));
            assert!(
                matches!(parse_command(&format!("/{}", command.name)), Some(Ok(_))),
                "{}",
                command.name
            );
        }
    }
}

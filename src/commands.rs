//! The slash commands every front end offers over a session: Zed gets them as
//! `available_commands_update` and sends them as prompts; the REPL reads them from its line.

/// One slash command with its argument, as typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
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

/// A command as the editor lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandInfo {
    pub name: &'static str,
    pub description: &'static str,
    /// What the argument is, when it takes one.
    pub hint: Option<&'static str>,
}

/// Every shared command, in `/help` order.
pub const COMMANDS: &[CommandInfo] = &[
    CommandInfo {
        name: "compact",
        description: "Summarise the conversation so far to free context",
        hint: Some("what the summary should focus on (optional)"),
    },
    CommandInfo {
        name: "clear",
        description: "Start a new context in this session (the history stays saved)",
        hint: None,
    },
    CommandInfo {
        name: "mode",
        description: "Show the modes, or switch: ask, accept-edits, plan, bypass",
        hint: Some("mode id (optional)"),
    },
    CommandInfo {
        name: "model",
        description: "List the models, or switch to one",
        hint: Some("model id (optional)"),
    },
    CommandInfo {
        name: "context",
        description: "How full the context window is, and what was left out",
        hint: None,
    },
    CommandInfo {
        name: "help",
        description: "The commands hearth understands",
        hint: None,
    },
];

/// A command line that names a shared command but cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandLineError {
    /// A command that takes no argument was given one.
    #[error("/{0} takes no argument")]
    NoArgument(&'static str),
    /// A command that takes one word was given several.
    #[error("/{0} takes at most one argument")]
    OneArgument(&'static str),
}

/// Reads `text` as a shared command. `None` when it is not one (a prompt, or a command only
/// some front end has), so the caller treats it as it would otherwise.
pub fn parse_command(text: &str) -> Option<Result<Command, CommandLineError>> {
    let rest = text.trim().strip_prefix('/')?;
    let (name, args) = match rest.split_once(char::is_whitespace) {
        Some((name, args)) => (name, args.trim()),
        None => (rest, ""),
    };
    let words: Vec<&str> = args.split_whitespace().collect();
    let one = |command: &'static str| match words.as_slice() {
        [] => Ok(None),
        [word] => Ok(Some((*word).to_owned())),
        _ => Err(CommandLineError::OneArgument(command)),
    };
    let none = |command: &'static str, parsed: Command| {
        if words.is_empty() {
            Ok(parsed)
        } else {
            Err(CommandLineError::NoArgument(command))
        }
    };
    Some(match name {
        "compact" => Ok(Command::Compact {
            focus: (!args.is_empty()).then(|| args.to_owned()),
        }),
        "clear" => none("clear", Command::Clear),
        "mode" => one("mode").map(Command::Mode),
        "model" => one("model").map(Command::Model),
        "context" => none("context", Command::Context),
        "help" => Ok(Command::Help),
        _ => return None,
    })
}

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
            parse_command("/compact  the parser work "),
            Some(Ok(Command::Compact {
                focus: Some("the parser work".into())
            }))
        );
        assert_eq!(
            parse_command("/compact"),
            Some(Ok(Command::Compact { focus: None }))
        );
        assert_eq!(parse_command("/clear"), Some(Ok(Command::Clear)));
        assert_eq!(
            parse_command("/mode plan"),
            Some(Ok(Command::Mode(Some("plan".into()))))
        );
        assert_eq!(parse_command("/model"), Some(Ok(Command::Model(None))));
        assert_eq!(parse_command("/context"), Some(Ok(Command::Context)));
        assert_eq!(
            parse_command("/context now"),
            Some(Err(CommandLineError::NoArgument("context")))
        );
        assert_eq!(
            parse_command("/mode a b"),
            Some(Err(CommandLineError::OneArgument("mode")))
        );
        assert_eq!(parse_command("/etc/hosts: what is this?"), None);
        assert_eq!(parse_command("explain /compact"), None);
        assert_eq!(parse_command("/sessions"), None);
    }

    #[test]
    fn help_lists_every_command() {
        let help = help_text();
        for command in COMMANDS {
            assert!(help.contains(&format!("/{}", command.name)));
        }
    }
}

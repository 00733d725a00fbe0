//! "Allow always" and "reject always" answers, remembered for a session and stored with it.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::access::PermissionAnswer;

/// What an "always" answer is keyed by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleKey<'a> {
    /// Any tool but a shell command: its name.
    Tool(&'a str),
    /// A shell command.
    Command {
        /// Every program the line may run, as far as can be told: "reject always" on any of
        /// them refuses the line.
        programs: &'a [String],
        /// What "allow always" is stored under and matched by: the program (with its
        /// subcommand for tools like git and cargo) of a *plain* invocation, one program
        /// with literal arguments and nothing else. `None` for every other line, which
        /// therefore asks each time, whatever was allowed before.
        invocation: Option<&'a str>,
    },
}

/// "Allow always" and "reject always" answers, remembered for a session. Commands are keyed by
/// program, other tools by name. The store keeps them typed: a record that does not parse is
/// reported as corrupt on load, never silently read as "no rules".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlwaysRules {
    #[serde(default)]
    pub allow_tools: BTreeSet<String>,
    #[serde(default)]
    pub reject_tools: BTreeSet<String>,
    /// Plain invocations allowed always: `ls`, `git status`.
    #[serde(default)]
    pub allow_programs: BTreeSet<String>,
    /// Programs rejected always: `rm`.
    #[serde(default)]
    pub reject_programs: BTreeSet<String>,
}

impl AlwaysRules {
    /// What the rules say about a call: `Some(true)` allowed always, `Some(false)` rejected
    /// always, `None` no rule. A command is rejected if any program in it is, and allowed
    /// only when it is a plain invocation that was allowed.
    pub fn lookup(&self, key: RuleKey<'_>) -> Option<bool> {
        match key {
            RuleKey::Tool(tool) if self.reject_tools.contains(tool) => Some(false),
            RuleKey::Tool(tool) if self.allow_tools.contains(tool) => Some(true),
            RuleKey::Tool(_) => None,
            RuleKey::Command { programs, .. }
                if programs.iter().any(|p| self.reject_programs.contains(p)) =>
            {
                Some(false)
            }
            RuleKey::Command {
                invocation: Some(invocation),
                ..
            } if self.allow_programs.contains(invocation) => Some(true),
            RuleKey::Command { .. } => None,
        }
    }

    /// Records an answer. "Allow always" on a command allows its plain invocation (a line
    /// that is not one is remembered as nothing: the next one asks again); "reject always"
    /// rejects its first program (the one the user was looking at).
    pub fn remember(&mut self, key: RuleKey<'_>, answer: PermissionAnswer) {
        match (key, answer) {
            (RuleKey::Tool(tool), PermissionAnswer::AllowAlways) => {
                self.reject_tools.remove(tool);
                self.allow_tools.insert(tool.to_owned());
            }
            (RuleKey::Tool(tool), PermissionAnswer::RejectAlways) => {
                self.allow_tools.remove(tool);
                self.reject_tools.insert(tool.to_owned());
            }
            (
                RuleKey::Command {
                    programs,
                    invocation: Some(invocation),
                },
                PermissionAnswer::AllowAlways,
            ) => {
                for p in programs {
                    self.reject_programs.remove(p);
                }
                self.allow_programs.insert(invocation.to_owned());
            }
            (RuleKey::Command { programs, .. }, PermissionAnswer::RejectAlways) => {
                if let Some(first) = programs.first() {
                    self.allow_programs
                        .retain(|allowed| allowed.split(' ').next() != Some(first.as_str()));
                    self.reject_programs.insert(first.clone());
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn programs(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    fn line<'a>(programs: &'a [String], invocation: Option<&'a str>) -> RuleKey<'a> {
        RuleKey::Command {
            programs,
            invocation,
        }
    }

    #[test]
    fn only_a_plain_invocation_that_was_allowed_is_allowed() {
        let mut rules = AlwaysRules::default();
        let ls = programs(&["ls"]);
        rules.remember(line(&ls, Some("ls")), PermissionAnswer::AllowAlways);
        assert_eq!(rules.lookup(line(&ls, Some("ls"))), Some(true));
        // The same program in a line that is not plain (a pipe, a redirection) asks.
        assert_eq!(rules.lookup(line(&programs(&["ls", "wc"]), None)), None);
        assert_eq!(rules.lookup(line(&ls, None)), None);
        // A subcommand key allows that subcommand only.
        let git = programs(&["git"]);
        rules.remember(
            line(&git, Some("git status")),
            PermissionAnswer::AllowAlways,
        );
        assert_eq!(rules.lookup(line(&git, Some("git status"))), Some(true));
        assert_eq!(rules.lookup(line(&git, Some("git push"))), None);
        // A line that is not plain is remembered as nothing.
        let before = rules.clone();
        rules.remember(
            line(&programs(&["rm"]), None),
            PermissionAnswer::AllowAlways,
        );
        assert_eq!(rules, before);
        assert_eq!(rules.lookup(RuleKey::Tool("ls")), None);
    }

    #[test]
    fn reject_always_wins_and_replaces_an_allow() {
        let mut rules = AlwaysRules::default();
        rules.remember(RuleKey::Tool("write_file"), PermissionAnswer::AllowAlways);
        rules.remember(RuleKey::Tool("write_file"), PermissionAnswer::RejectAlways);
        assert_eq!(rules.lookup(RuleKey::Tool("write_file")), Some(false));
        assert!(rules.allow_tools.is_empty());
        let git = programs(&["git"]);
        rules.remember(
            line(&git, Some("git status")),
            PermissionAnswer::AllowAlways,
        );
        rules.remember(
            line(&programs(&["git", "ls"]), None),
            PermissionAnswer::RejectAlways,
        );
        assert!(rules.allow_programs.is_empty(), "{rules:?}");
        assert_eq!(
            rules.lookup(line(&programs(&["ls", "git"]), None)),
            Some(false)
        );
        assert_eq!(rules.lookup(line(&git, Some("git status"))), Some(false));
        assert_eq!(rules.lookup(line(&programs(&["ls"]), Some("ls"))), None);
    }

    #[test]
    fn once_answers_remember_nothing() {
        let mut rules = AlwaysRules::default();
        for answer in [
            PermissionAnswer::AllowOnce,
            PermissionAnswer::RejectOnce,
            PermissionAnswer::Cancelled,
        ] {
            rules.remember(RuleKey::Tool("bash"), answer);
        }
        assert_eq!(rules, AlwaysRules::default());
    }

    #[test]
    fn a_stored_value_of_the_wrong_shape_is_an_error_not_empty_rules() {
        let bad = serde_json::json!({"allow_tools": "write_file"});
        assert!(serde_json::from_value::<AlwaysRules>(bad).is_err());
        let unknown = serde_json::json!({"allow_everything": true});
        assert!(serde_json::from_value::<AlwaysRules>(unknown).is_err());
        let good = serde_json::json!({"allow_programs": ["ls"]});
        let rules: AlwaysRules = serde_json::from_value(good).unwrap();
        assert!(rules.allow_programs.contains("ls"));
    }
}

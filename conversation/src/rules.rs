//! "Allow always" and "reject always" answers, remembered for a session and stored with it.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::access::PermissionAnswer;

/// What an "always" answer is keyed by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleKey<'a> {
    /// Any tool but a shell command: its name.
    Tool(&'a str),
    /// A shell command: the programs its line runs; empty when the line cannot be keyed safely.
    Command(&'a [String]),
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
    #[serde(default)]
    pub allow_programs: BTreeSet<String>,
    #[serde(default)]
    pub reject_programs: BTreeSet<String>,
}

impl AlwaysRules {
    /// What the rules say about a call: `Some(true)` allowed always, `Some(false)` rejected
    /// always, `None` no rule. A command is allowed only if every program in it is, and
    /// rejected if any program in it is.
    pub fn lookup(&self, key: RuleKey<'_>) -> Option<bool> {
        match key {
            RuleKey::Tool(tool) if self.reject_tools.contains(tool) => Some(false),
            RuleKey::Tool(tool) if self.allow_tools.contains(tool) => Some(true),
            RuleKey::Tool(_) => None,
            RuleKey::Command(programs)
                if programs.iter().any(|p| self.reject_programs.contains(p)) =>
            {
                Some(false)
            }
            RuleKey::Command(programs)
                if !programs.is_empty()
                    && programs.iter().all(|p| self.allow_programs.contains(p)) =>
            {
                Some(true)
            }
            RuleKey::Command(_) => None,
        }
    }

    /// Records an answer. "Allow always" on a command allows each of its programs; "reject
    /// always" rejects its first program (the one the user was looking at). A command that
    /// cannot be keyed is remembered as nothing: the next one asks again.
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
            (RuleKey::Command(programs), PermissionAnswer::AllowAlways) => {
                for p in programs {
                    self.reject_programs.remove(p);
                    self.allow_programs.insert(p.clone());
                }
            }
            (RuleKey::Command(programs), PermissionAnswer::RejectAlways) => {
                if let Some(first) = programs.first() {
                    self.allow_programs.remove(first);
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

    #[test]
    fn a_command_is_allowed_only_when_every_program_is() {
        let mut rules = AlwaysRules::default();
        rules.remember(
            RuleKey::Command(&programs(&["ls", "wc"])),
            PermissionAnswer::AllowAlways,
        );
        assert_eq!(
            rules.lookup(RuleKey::Command(&programs(&["ls"]))),
            Some(true)
        );
        assert_eq!(
            rules.lookup(RuleKey::Command(&programs(&["ls", "rm"]))),
            None
        );
        assert_eq!(rules.lookup(RuleKey::Command(&[])), None);
        assert_eq!(rules.lookup(RuleKey::Tool("ls")), None);
    }

    #[test]
    fn reject_always_wins_and_replaces_an_allow() {
        let mut rules = AlwaysRules::default();
        rules.remember(RuleKey::Tool("write_file"), PermissionAnswer::AllowAlways);
        rules.remember(RuleKey::Tool("write_file"), PermissionAnswer::RejectAlways);
        assert_eq!(rules.lookup(RuleKey::Tool("write_file")), Some(false));
        assert!(rules.allow_tools.is_empty());
        rules.remember(
            RuleKey::Command(&programs(&["rm", "ls"])),
            PermissionAnswer::RejectAlways,
        );
        assert_eq!(
            rules.lookup(RuleKey::Command(&programs(&["ls", "rm"]))),
            Some(false)
        );
        assert_eq!(rules.lookup(RuleKey::Command(&programs(&["ls"]))), None);
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

//! The four session modes. What each allows is decided by the permission policy; this file only
//! names them.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Reads are free; writes, edits and commands ask.
    #[default]
    Ask,
    /// Writes and edits are free; commands ask.
    AcceptEdits,
    /// Read-only on the project; writes only in the plan directory; no commands.
    Plan,
    /// Nothing asks.
    Bypass,
}

impl Mode {
    pub const ALL: [Mode; 4] = [Mode::Ask, Mode::AcceptEdits, Mode::Plan, Mode::Bypass];

    /// The id used on the wire and in config files.
    pub fn id(self) -> &'static str {
        match self {
            Self::Ask => "ask",
            Self::AcceptEdits => "accept-edits",
            Self::Plan => "plan",
            Self::Bypass => "bypass",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Self::Ask => "Ask",
            Self::AcceptEdits => "Accept edits",
            Self::Plan => "Plan",
            Self::Bypass => "Bypass permissions",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            Self::Ask => "Reads are free; writes, edits and commands ask first",
            Self::AcceptEdits => "Writes and edits are free; commands ask first",
            Self::Plan => "Read-only: explore and write a plan, change nothing",
            Self::Bypass => "Nothing asks: every tool runs without confirmation",
        }
    }

    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.id() == id)
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

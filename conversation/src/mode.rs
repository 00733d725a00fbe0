//! The four session modes. What each allows is decided by the permission policy
//! (the hearth crate's `tools::policy`); this file only names them.

use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The session's permission mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Reads are free; writes, edits and commands ask.
    #[default]
    Ask,
    /// Writes and edits are free; commands ask.
    AcceptEdits,
    /// The project is read-only; writes only inside the plan directory; no commands.
    Plan,
    /// Nothing asks.
    Bypass,
}

impl Mode {
    /// Every mode, in picker order.
    pub const ALL: [Mode; 4] = [Mode::Ask, Mode::AcceptEdits, Mode::Plan, Mode::Bypass];

    /// The stable id (config files, ACP option values, stored sessions).
    pub fn id(self) -> &'static str {
        match self {
            Mode::Ask => "ask",
            Mode::AcceptEdits => "accept-edits",
            Mode::Plan => "plan",
            Mode::Bypass => "bypass",
        }
    }

    /// The name a picker shows.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Ask => "Ask",
            Mode::AcceptEdits => "Accept edits",
            Mode::Plan => "Plan",
            Mode::Bypass => "Bypass",
        }
    }

    /// One line for a picker.
    pub fn description(self) -> &'static str {
        match self {
            Mode::Ask => "Reads are free; edits, writes and commands ask first.",
            Mode::AcceptEdits => "Edits and writes are applied without asking; commands ask first.",
            Mode::Plan => {
                "Read-only: explore and write a plan; no commands, writes only to the plan directory."
            }
            Mode::Bypass => "Nothing asks: edits, writes and commands run without confirmation.",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// A mode id that is not one of [`Mode::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown mode `{0}` (expected ask, accept-edits, plan or bypass)")]
pub struct UnknownMode(pub String);

impl FromStr for Mode {
    type Err = UnknownMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Mode::ALL
            .into_iter()
            .find(|m| m.id() == s)
            .ok_or_else(|| UnknownMode(s.to_owned()))
    }
}

impl Mode {
    /// The mode with this id, if any.
    pub fn from_id(id: &str) -> Option<Self> {
        id.parse().ok()
    }
}

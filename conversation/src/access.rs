//! What a tool call does, as the permission policy judges it, and what the user answered when
//! asked.

use serde::{Deserialize, Serialize};

/// What a call does, as the policy judges it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Reads files or searches; changes nothing.
    Read,
    /// Creates or changes files (or, for external tools, may change anything).
    Write,
    /// Runs a command.
    Execute,
    /// Changes only the session's own state (the plan checklist); never asks.
    SessionOnly,
}

/// Where a call reaches, as the permission question tells it: inside the session's roots (its
/// project, plan and extra directories) or outside them. Outside, no "always" answer is
/// offered or honoured, and headless `--allow-*` permits do not apply: the user decides each
/// time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    WithinRoots,
    OutsideRoots,
}

/// The user's answer to a permission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionAnswer {
    AllowOnce,
    AllowAlways,
    RejectOnce,
    RejectAlways,
    /// The turn was cancelled while the question was open.
    Cancelled,
}

impl PermissionAnswer {
    pub fn allows(self) -> bool {
        matches!(self, Self::AllowOnce | Self::AllowAlways)
    }
}

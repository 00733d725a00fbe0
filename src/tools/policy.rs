//! Modes and the permission policy, as pure functions: given the mode, what a call does, the
//! paths it touches (already resolved by [`super::paths`]), the session's [`Roots`] and what
//! the user said "always" to, [`decide`] says allow, ask or deny. Nothing here does I/O except
//! [`plan_dir`], which canonicalises the cwd once.
//!
//! One confinement rule: inside the roots, reads are free and writes follow the mode; outside
//! them, reads and writes ask in every mode but bypass (plan mode refuses writes outside its
//! plan directory outright), and no "always allow" reaches outside. This is what the careful
//! agents do: claude-code asks before reading outside the working directory, codex confines
//! writes to the workspace.

use std::path::{Path, PathBuf};

use hearth_conversation::{Access, AlwaysRules, Mode, Reach, RuleKey};

use super::invocation::CommandShape;
use super::paths::{self, Resolved};
use super::roots::Roots;

/// What the model reads when the user rejects a call.
pub const USER_REJECTED: &str = "The user rejected this call.";

/// What the model reads when a "reject always" rule refuses a call without asking.
pub const USER_REJECTED_ALWAYS: &str =
    "The user rejected this call: they chose to always reject it in this session.";

/// The policy's answer for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Allow,
    /// Ask the user first; the question says whether the call reaches outside the roots.
    Ask(Reach),
    /// Do not run it; the reason goes to the model.
    Deny(String),
}

/// One call as the policy sees it.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// The tool's name (the key of "always" rules for tools other than commands).
    pub tool: &'a str,
    pub access: Access,
    /// Every path the call may write or read, resolved.
    pub paths: &'a [Resolved],
    /// For shell commands: the programs the line runs and, for a plain invocation, the key
    /// "always" rules use. `None` for everything that is not a command.
    pub command: Option<&'a CommandShape>,
}

impl<'a> Subject<'a> {
    /// What an "always" answer about this call is keyed by.
    pub fn rule_key(&self) -> RuleKey<'a> {
        match self.command {
            Some(shape) => RuleKey::Command {
                programs: &shape.programs,
                invocation: shape.invocation.as_deref(),
            },
            None => RuleKey::Tool(self.tool),
        }
    }
}

/// Decides one call in `mode`, the session's mode at the moment of the call.
///
/// "Reject always" refuses in every mode, bypass included: the user said so explicitly.
/// "Allow always" never lifts plan mode's limits and never reaches outside the roots.
pub fn decide(mode: Mode, subject: &Subject<'_>, roots: &Roots, rules: &AlwaysRules) -> Decision {
    let remembered = rules.lookup(subject.rule_key());
    if remembered == Some(false) {
        return Decision::Deny(USER_REJECTED_ALWAYS.to_owned());
    }
    let reach = if roots.contain_all(subject.paths) {
        Reach::WithinRoots
    } else {
        Reach::OutsideRoots
    };
    let ask = || {
        if remembered == Some(true) && reach == Reach::WithinRoots {
            Decision::Allow
        } else {
            Decision::Ask(reach)
        }
    };
    match (mode, subject.access) {
        (_, Access::SessionOnly) | (Mode::Bypass, _) => Decision::Allow,
        (_, Access::Read) if reach == Reach::WithinRoots => Decision::Allow,
        // Reading outside the project asks each time: an answer about one file is no
        // answer about the user's keys or mail.
        (_, Access::Read) => Decision::Ask(Reach::OutsideRoots),
        (Mode::Plan, Access::Execute) => Decision::Deny(format!(
            "Plan mode: `{}` runs commands, which plan mode does not allow. Keep planning, or \
             ask the user to switch to ask or accept-edits mode.",
            subject.tool
        )),
        (Mode::Plan, Access::Write) => plan_write(subject, roots.plan_dir()),
        (Mode::AcceptEdits, Access::Write) if reach == Reach::WithinRoots => Decision::Allow,
        (Mode::Ask | Mode::AcceptEdits, Access::Write | Access::Execute) => ask(),
    }
}

/// Plan mode writes: allowed only when every path really lies inside the plan directory.
fn plan_write(subject: &Subject<'_>, plan_dir: &Resolved) -> Decision {
    let refuse = |what: String| {
        Decision::Deny(format!(
            "Plan mode: {what}; the project is read-only in plan mode. Only files inside the \
             plan directory {} may be written.",
            plan_dir.path().display()
        ))
    };
    if subject.paths.is_empty() {
        return refuse(format!("`{}` may change the project", subject.tool));
    }
    match subject
        .paths
        .iter()
        .find(|p| !paths::is_within(p.real(), plan_dir.real()))
    {
        Some(outside) => refuse(format!(
            "{} is outside the plan directory",
            outside.path().display()
        )),
        None => Decision::Allow,
    }
}

/// Whether a tool of this access class is offered to the model at all in `mode`: plan mode
/// does not offer commands (the policy refuses them too, should a model call one anyway).
pub fn offers(mode: Mode, access: Access) -> bool {
    !(mode == Mode::Plan && access == Access::Execute)
}

/// The per-project plan directory: `<data_dir>/plans/<basename>-<hash>`, where `data_dir` is
/// hearth's data directory (`$XDG_DATA_HOME/hearth`) and the hash is FNV-1a 64 of the
/// canonical cwd, so the id is stable across runs, processes and builds.
pub fn plan_dir(data_dir: &Path, cwd: &Path) -> PathBuf {
    let canonical = std::fs::canonicalize(cwd).unwrap_or_else(|_| paths::normalize(cwd));
    let basename: String = canonical
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let basename = if basename.is_empty() {
        "root".to_owned()
    } else {
        basename
    };
    let hash = fnv1a64(canonical.as_os_str().as_encoded_bytes());
    data_dir
        .join("plans")
        .join(format!("{basename}-{hash:016x}"))
}

/// FNV-1a, 64 bit: a fixed, unseeded hash (std's `DefaultHasher` may change between releases).
fn fnv1a64(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes
        .iter()
        .fold(OFFSET, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

/// The system prompt section for plan mode, naming the plan directory.
pub fn plan_mode_prompt(plan_dir: &Path) -> String {
    include_str!("../../prompts/plan_mode.md")
        .replace("{plan_dir}", &plan_dir.display().to_string())
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;

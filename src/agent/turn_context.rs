//! [`TurnContext`]: everything a turn needs besides the history it extends, borrowed from the
//! session and the core for the length of one turn.

use std::path::Path;
use std::sync::Mutex;

use hearth_conversation::{AlwaysRules, Mode, ModelRef};
use tokio_util::sync::CancellationToken;

use super::catalog::Catalog;
use super::dispatch::DispatchContext;
use super::model_context::ModelContexts;
use super::session_context::SessionContext;
use crate::config::AgentSettings;
use crate::host::ClientOps;
use crate::tools::{Roots, ToolLimits, ToolRegistry};

/// Everything a turn needs besides the history it extends.
pub struct TurnContext<'a> {
    pub catalog: &'a Catalog,
    pub model: Option<&'a ModelRef>,
    pub system_prompt: &'a str,
    pub client: &'a dyn ClientOps,
    pub cancel: &'a CancellationToken,
    pub settings: &'a AgentSettings,
    pub tools: &'a ToolRegistry,
    pub mode: Mode,
    pub cwd: &'a Path,
    pub home: Option<&'a Path>,
    /// The session's mode now (the `mode` above is the one the turn began in: it chose the
    /// prompt and tools; the policy asks this at each call).
    pub live_mode: &'a (dyn Fn() -> Mode + Sync),
    /// The project, plan and extra directories: where tools work without asking about place.
    pub roots: &'a Roots,
    pub rules: &'a Mutex<AlwaysRules>,
    pub limits: &'a ToolLimits,
    /// Windows and token counting per model.
    pub contexts: &'a ModelContexts,
    /// The session's view of its history: start, summary, last report.
    pub context: &'a Mutex<SessionContext>,
}

impl TurnContext<'_> {
    pub(super) fn dispatch(&self) -> DispatchContext<'_> {
        DispatchContext {
            tools: self.tools,
            mode: self.live_mode,
            cwd: self.cwd,
            home: self.home,
            roots: self.roots,
            rules: self.rules,
            limits: self.limits,
            client: self.client,
            cancel: self.cancel,
        }
    }
}

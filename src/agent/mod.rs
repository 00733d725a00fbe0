//! The agent core: session state, the turn loop, tool dispatch, modes and permission policy.

mod client_ops;
mod event;
mod history;
mod ids;
mod local_ops;
mod paths;
mod policy;

pub use client_ops::{
    ClientOps, ClientOpsError, ExitStatus, PermissionAnswer, TerminalOutput, TerminalRequest,
};
pub use event::{
    AgentEvent, PlanEntry, PlanStatus, ToolCard, ToolCardUpdate, ToolContent, ToolKind,
    ToolLocation, ToolStatus,
};
pub use history::{HistoryEntry, ToolCallRecord};
pub use ids::{SessionId, TerminalId, ToolCallId};
pub use local_ops::{LocalClientOps, LocalFrontEnd};
pub use paths::{PathError, Resolved, is_within, normalize, real_path, resolve};
pub use policy::{
    Access, AlwaysRules, Decision, Mode, Subject, USER_REJECTED, USER_REJECTED_ALWAYS, UnknownMode,
    decide, offers, plan_dir, plan_mode_prompt,
};

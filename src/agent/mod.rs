//! The agent core: session state, the turn loop, tool dispatch, modes and permission policy.

mod client_ops;
mod event;
mod history;
mod ids;

pub use client_ops::{
    ClientOps, ClientOpsError, ExitStatus, PermissionAnswer, TerminalOutput, TerminalRequest,
};
pub use event::{
    AgentEvent, PlanEntry, PlanStatus, ToolCard, ToolCardUpdate, ToolContent, ToolKind,
    ToolLocation, ToolStatus,
};
pub use history::{HistoryEntry, ToolCallRecord};
pub use ids::{SessionId, TerminalId, ToolCallId};

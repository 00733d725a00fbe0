//! The agent core: session state, the turn loop, tool dispatch, modes and permission policy.

mod catalog;
mod client_ops;
mod core;
mod event;
mod history;
mod ids;
mod mode;
mod request;
mod session;
mod turn;

pub use catalog::{Catalog, Endpoint, EndpointListing, ModelChoice, ModelRef};
pub use client_ops::{
    ClientOps, ClientOpsError, ExitStatus, PermissionAnswer, TerminalOutput, TerminalRequest,
};
pub use core::AgentCore;
pub use event::{
    AgentEvent, PlanEntry, PlanStatus, ToolCard, ToolCardUpdate, ToolContent, ToolKind,
    ToolLocation, ToolStatus,
};
pub use history::{HistoryEntry, ToolCallRecord};
pub use ids::{SessionId, TerminalId, ToolCallId};
pub use mode::Mode;
pub use session::{Session, SessionSettings, TurnTicket};
pub use turn::{StopReason, TurnContext, TurnError, run_turn};

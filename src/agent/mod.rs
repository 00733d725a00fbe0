//! The agent core: session state, the turn loop, tool dispatch, modes and permission policy.

mod catalog;
mod client_ops;
mod compact;
mod context_ops;
mod core;
mod dispatch;
mod event;
mod fit;
mod fitting;
mod history;
mod ids;
mod local_ops;
mod mode;
mod model_context;
mod paths;
mod persist;
mod policy;
mod request;
mod round;
mod session;
mod session_context;
mod turn;

pub use catalog::{Catalog, Endpoint, EndpointListing, ModelChoice, ModelRef};
pub use client_ops::{
    ClientOps, ClientOpsError, ExitStatus, PermissionAnswer, TerminalOutput, TerminalRequest,
};
pub use compact::CompactError;
pub use context_ops::{Compacted, ContextCommandError};
pub use core::AgentCore;
pub use event::{
    AgentEvent, PlanEntry, PlanStatus, ToolCard, ToolCardUpdate, ToolContent, ToolKind,
    ToolLocation, ToolStatus,
};
pub use history::{HistoryEntry, ToolCallRecord};
pub use ids::{SessionId, TerminalId, ToolCallId};
pub use local_ops::{LocalClientOps, LocalFrontEnd};
pub use mode::{Mode, UnknownMode};
pub use model_context::{ModelContext, ModelContexts, default_max_tokens};
pub use paths::{PathError, Resolved, is_within, normalize, real_path, resolve};
pub use persist::{Persistence, Recorder};
pub use policy::{
    Access, AlwaysRules, Decision, Subject, USER_REJECTED, USER_REJECTED_ALWAYS, decide, offers,
    plan_dir, plan_mode_prompt,
};
pub use session::{Session, SessionSettings, TurnTicket};
pub use session_context::SessionContext;
pub use turn::{StopReason, TurnContext, TurnError, run_turn};

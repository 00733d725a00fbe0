//! The conversation's vocabulary: what every layer of hearth speaks and none of them owns.
//!
//! The agent core, the session store, the context projection, the tools, the parsers and the
//! config all name the same things — a session id, a history entry, a tool card, a mode, a
//! remembered "always" answer, a session's settings. They live here, below all of them, so that no lower layer has to
//! import the agent to name them. This crate depends only on `hearth-backend` (for message
//! content) and does no I/O.

mod access;
mod event;
mod history;
mod ids;
mod mode;
mod model_ref;
mod rules;
mod settings;

pub use access::{Access, PermissionAnswer, Reach};
pub use event::{
    AgentEvent, PlanEntry, PlanStatus, ToolCard, ToolCardUpdate, ToolContent, ToolKind,
    ToolLocation, ToolStatus,
};
pub use history::{HistoryEntry, ToolCallRecord};
pub use ids::{SessionId, TerminalId, ToolCallId};
pub use mode::{Mode, UnknownMode};
pub use model_ref::ModelRef;
pub use rules::{AlwaysRules, RuleKey};
pub use settings::SessionSettings;

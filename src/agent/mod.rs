//! The agent core: session state, the turn loop, tool dispatch, persistence of rounds, and the
//! model catalog. The top of the core: nothing below it imports it.

mod answer_code;
mod answer_edit;
mod catalog;
mod code_check;
mod code_fix;
mod code_merge;
mod compact;
mod context_ops;
mod core;
mod digest;
mod dispatch;
mod edit_scope;
mod file_request;
mod grounding;
mod loop_guard;
mod model_context;
mod narrated;
mod persist;
mod reminder;
mod request;
mod request_fit;
mod round;
mod runaway;
mod session;
mod session_context;
mod turn;
mod turn_context;
mod turn_fit;
mod unchanged;
mod worked_example;
mod write_check;

pub use catalog::{Catalog, Endpoint, EndpointListing, ModelChoice};
pub use code_fix::FIXED_CODE;
pub use compact::CompactError;
pub use context_ops::{Compacted, ContextCommandError};
pub use core::AgentCore;
pub use model_context::{ModelContext, ModelContexts, default_max_tokens};
pub use persist::{Persistence, Recorder};
pub use session::{Session, TurnTicket};
pub use session_context::SessionContext;
pub use turn::{StopReason, TurnError, run_turn};
pub use turn_context::TurnContext;

//! MCP servers for a session: the servers an ACP client passes in `session/new` (and load /
//! resume) are started for the session, their tools offered to the model as `server__tool`,
//! calls forwarded, and the servers stopped when the session goes away.

mod config;
mod connect;
mod convert;
mod error;
mod names;
mod servers;
mod tool;

pub use config::McpServerConfig;
pub use convert::{kind_for, tool_output};
pub use error::McpError;
pub use names::{MAX_NAME_LEN, ToolNamer, sanitize};
pub use servers::{START_TIMEOUT, SessionTools, StartFailure, start_session_tools};
pub use tool::{MCP_ACCESS, McpTool};

//! The host seam: what the agent asks of whoever hosts it ([`ClientOps`]: files, terminals,
//! permission questions, updates), and [`LocalClientOps`], the host hearth is itself in the
//! REPL and batch front ends (and the ACP front end's fallback for what a client lacks).

mod client_ops;
pub mod file_io;
mod local;
mod memory_cap;
mod parent_death;

pub use client_ops::{ClientOps, ClientOpsError, ExitStatus, TerminalOutput, TerminalRequest};
pub use local::{LocalClientOps, LocalFrontEnd};
pub use memory_cap::cap_memory;
pub use parent_death::die_with_parent;

//! The tools the model can call, one file each, behind [`ToolHandler`]; [`ToolRegistry`]
//! holds a session's tools; [`resolve`] confines the paths they are given and [`decide`] is the
//! permission policy that judges each call. Tools do their I/O through [`crate::host::ClientOps`], so the
//! editor sees reads, writes and commands.

mod args;
mod bash;
mod compact;
mod edit_file;
mod file_checks;
mod glob;
mod grep;
mod handler;
mod invocation;
mod list_dir;
mod lookup;
mod mentions;
mod paths;
mod policy;
mod project_map;
mod read_file;
mod registry;
mod roots;
mod shell_words;
mod update_plan;
mod walk;
mod write_file;

#[cfg(test)]
pub(crate) mod test_support;

pub use bash::{Bash, NAME as BASH};
pub use compact::{COMPACT_WINDOW, compact_specs};
pub use edit_file::{Applied, Edit, EditFile, NAME as EDIT_FILE, apply_edits};
pub use glob::Glob;
pub use grep::Grep;
pub use handler::{
    DEFAULT_MCP_CALL_TIMEOUT_SECS, Prepared, ToolContext, ToolError, ToolHandler, ToolLimits,
    ToolOutput,
};
pub use invocation::{CommandShape, plain_invocation};
pub use list_dir::ListDir;
pub use lookup::lookup_terms;
pub use mentions::{attach_named_files, looks_secret, named_paths, named_project_paths};
pub use paths::{PathError, Resolved, is_within, normalize, real_path, resolve};
pub use policy::{
    Decision, Subject, USER_REJECTED, USER_REJECTED_ALWAYS, decide, offers, plan_dir,
    plan_mode_prompt,
};
pub use project_map::project_map;
pub use read_file::ReadFile;
pub use registry::{RegistryError, ToolRegistry};
pub use roots::Roots;
pub use shell_words::command_programs;
pub use update_plan::UpdatePlan;
pub use write_file::{NAME as WRITE_FILE, WriteFile};

//! [`ToolRegistry`]: the tools of a session, by name, in a stable order (the order the model
//! sees them in). MCP tools join the same registry.

use std::sync::Arc;

use hearth_backend::ToolSpec;

use super::handler::ToolHandler;
use super::{bash, edit_file, glob, grep, list_dir, read_file, update_plan, write_file};
use crate::agent::{Mode, offers};

/// Why a tool could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// Another tool already has this name: the caller skips the newcomer (and reports it,
    /// e.g. an MCP server's tool colliding with a built-in).
    #[error("a tool named `{0}` is already registered")]
    Duplicate(String),
}

#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn ToolHandler>>,
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// The built-in tools.
    pub fn builtin() -> Self {
        let tools: Vec<Arc<dyn ToolHandler>> = vec![
            Arc::new(read_file::ReadFile),
            Arc::new(list_dir::ListDir),
            Arc::new(glob::Glob),
            Arc::new(grep::Grep),
            Arc::new(edit_file::EditFile),
            Arc::new(write_file::WriteFile),
            Arc::new(bash::Bash),
            Arc::new(update_plan::UpdatePlan),
        ];
        Self { tools }
    }

    pub fn register(&mut self, tool: Arc<dyn ToolHandler>) -> Result<(), RegistryError> {
        if self.get(tool.name()).is_some() {
            return Err(RegistryError::Duplicate(tool.name().to_owned()));
        }
        self.tools.push(tool);
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn ToolHandler>> {
        self.tools.iter().find(|t| t.name() == name)
    }

    /// Every tool, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn ToolHandler>> {
        self.tools.iter()
    }

    /// Whether `name` exists and is offered in `mode` (a call to a tool that is not offered
    /// is answered with an error, not run).
    pub fn offered(&self, mode: Mode, name: &str) -> bool {
        self.get(name).is_some_and(|t| offers(mode, t.access()))
    }

    /// The specs the model sees in `mode` (plan mode leaves out commands).
    pub fn specs_for_mode(&self, mode: Mode) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .filter(|t| offers(mode, t.access()))
            .map(|t| t.spec())
            .collect()
    }
}

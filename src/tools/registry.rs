//! [`ToolRegistry`]: the tools of a session, by name, in a stable order (the order the model
//! sees them in). MCP tools join the same registry.

use std::sync::Arc;

use hearth_backend::ToolSpec;
use hearth_conversation::{Access, Mode};

use super::handler::ToolHandler;
use super::policy::offers;
use super::{bash, edit_file, glob, grep, list_dir, read_file, update_plan, write_file};

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

    /// Whether calls to `name` may run together with the calls around them: only tools that
    /// merely read. Anything that may change files or the session, and unknown tools, run one
    /// at a time, in call order.
    pub fn runs_concurrently(&self, name: &str) -> bool {
        self.get(name).is_some_and(|t| t.access() == Access::Read)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_specs_are_complete() {
        let registry = ToolRegistry::builtin();
        let names: Vec<&str> = registry.iter().map(|t| t.name()).collect();
        assert_eq!(
            names,
            [
                "read_file",
                "list_dir",
                "glob",
                "grep",
                "edit_file",
                "write_file",
                "bash",
                "update_plan"
            ]
        );
        for tool in registry.iter() {
            let spec = tool.spec();
            assert_eq!(spec.name, tool.name());
            assert!(spec.description.len() > 80, "{}: description", spec.name);
            assert_eq!(spec.parameters["type"], "object", "{}", spec.name);
            assert_eq!(
                spec.parameters["additionalProperties"], false,
                "{}",
                spec.name
            );
            let props = spec.parameters["properties"].as_object().unwrap();
            for required in spec.parameters["required"].as_array().into_iter().flatten() {
                assert!(
                    props.contains_key(required.as_str().unwrap()),
                    "{}",
                    spec.name
                );
            }
        }
    }

    #[test]
    fn names_are_unique_and_lookups_work() {
        let mut registry = ToolRegistry::builtin();
        let err = registry
            .register(Arc::new(read_file::ReadFile))
            .unwrap_err();
        assert_eq!(err, RegistryError::Duplicate("read_file".into()));
        assert!(
            registry
                .get("grep")
                .is_some_and(|t| t.access() == Access::Read)
        );
        assert!(registry.get("nope").is_none());
        let alone: Vec<&str> = registry
            .iter()
            .filter(|t| !registry.runs_concurrently(t.name()))
            .map(|t| t.name())
            .collect();
        assert_eq!(alone, ["edit_file", "write_file", "bash", "update_plan"]);
        assert!(!registry.runs_concurrently("nope"));
        let offered = |mode| -> Vec<String> {
            registry
                .specs_for_mode(mode)
                .into_iter()
                .map(|s| s.name)
                .collect()
        };
        assert!(offered(Mode::Ask).iter().any(|n| n == "bash"));
        assert!(!offered(Mode::Plan).iter().any(|n| n == "bash"));
    }
}

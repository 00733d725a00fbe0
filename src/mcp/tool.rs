//! [`McpTool`]: one tool of an MCP server behind the [`ToolHandler`] seam.

use async_trait::async_trait;
use hearth_backend::ToolSpec;
use hearth_conversation::{Access, ToolKind};
use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, Tool};
use rmcp::service::{Peer, ServiceError};
use serde_json::Value;

use super::convert::{kind_for, tool_output};
use crate::tools::{Prepared, ToolContext, ToolError, ToolHandler, ToolOutput};

/// How the policy judges every MCP tool: an MCP tool runs code in another process, with
/// effects hearth cannot see or confine, so it is judged like a command (asks in ask and
/// accept-edits, not offered and refused in plan mode, free in bypass), whatever its
/// annotations claim.
pub const MCP_ACCESS: Access = Access::Execute;

/// A tool of a running MCP server, offered to the model under a `server__tool` name.
pub struct McpTool {
    /// The name the model calls it by (see [`super::ToolNamer`]).
    name: String,
    /// The server's name, as the client gave it.
    server: String,
    /// The tool's name on its server.
    tool: String,
    description: String,
    schema: Value,
    kind: ToolKind,
    peer: Peer<RoleClient>,
}

impl McpTool {
    /// `tool` of `server`, called through `peer`, named `name` for the model.
    pub fn new(name: String, server: &str, tool: &Tool, peer: Peer<RoleClient>) -> Self {
        let mut schema = Value::Object((*tool.input_schema).clone());
        // Some servers leave out `type` (or give an empty schema); models and servers expect
        // an object of arguments.
        if schema.get("type").is_none() {
            schema["type"] = Value::from("object");
        }
        let summary = tool
            .description
            .as_deref()
            .or(tool.title.as_deref())
            .unwrap_or("(no description)");
        Self {
            name,
            server: server.to_owned(),
            tool: tool.name.to_string(),
            description: format!(
                "{summary}\n\n(Tool `{}` of MCP server `{server}`.)",
                tool.name
            ),
            schema,
            kind: kind_for(tool.annotations.as_ref()),
            peer,
        }
    }

    fn server_error(&self, err: ServiceError) -> ToolError {
        match err {
            ServiceError::McpError(data) => ToolError::Model(format!(
                "MCP server `{}` answered with an error: {}",
                self.server, data.message
            )),
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                ToolError::Model(format!(
                    "MCP server `{}` is not running any more ({err}); its tools cannot be used.",
                    self.server
                ))
            }
            other => ToolError::Model(format!(
                "calling `{}` on MCP server `{}` failed: {other}",
                self.tool, self.server
            )),
        }
    }
}

#[async_trait]
impl ToolHandler for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.clone(),
            description: self.description.clone(),
            parameters: self.schema.clone(),
        }
    }

    /// See [`MCP_ACCESS`].
    fn access(&self) -> Access {
        MCP_ACCESS
    }

    async fn prepare(&self, args: &Value, _ctx: &ToolContext<'_>) -> Result<Prepared, ToolError> {
        if !(args.is_object() || args.is_null()) {
            return Err(ToolError::Model(format!(
                "{}: the arguments must be a JSON object, got {args}",
                self.name
            )));
        }
        Ok(Prepared {
            title: format!("{}: {}", self.server, self.tool),
            kind: self.kind,
            locations: Vec::new(),
            access: self.access(),
            paths: Vec::new(),
            command: None,
            preview: Vec::new(),
        })
    }

    async fn run(
        &self,
        args: &Value,
        _prepared: &Prepared,
        ctx: &ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let mut params = CallToolRequestParams::new(self.tool.clone());
        if let Value::Object(map) = args {
            params = params.with_arguments(map.clone());
        }
        tracing::debug!(server = %self.server, tool = %self.tool, "MCP call");
        // Dropping the call on cancel makes rmcp tell the server the request was cancelled.
        // A server that never answers must not hold the turn: past the limit the call is
        // dropped (rmcp tells the server) and the model hears it failed.
        let limit = ctx.limits.mcp_call_timeout();
        let result = tokio::select! {
            result = tokio::time::timeout(limit, self.peer.call_tool(params)) => match result {
                Ok(result) => result,
                Err(_) => {
                    return Err(ToolError::Model(format!(
                        "MCP server `{}` did not answer `{}` within {} s; the call was cancelled",
                        self.server,
                        self.tool,
                        limit.as_secs()
                    )));
                }
            },
            () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
        };
        match result {
            Ok(result) => Ok(tool_output(&result, ctx.limits.output_bytes)),
            Err(err) => Err(self.server_error(err)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::tools::{Decision, Resolved, Roots, Subject, decide, offers};
    use hearth_conversation::{AlwaysRules, Mode, PermissionAnswer, Reach};

    #[test]
    fn mcp_tools_ask_unless_bypass_and_are_refused_in_plan_mode() {
        let resolved = |p: &str| Resolved::from_absolute(Path::new(p)).unwrap();
        let plan = Roots::new(
            resolved("/nonexistent/proj"),
            resolved("/nonexistent/plan"),
            Vec::new(),
        );
        let subject = Subject {
            tool: "fixture__echo",
            access: MCP_ACCESS,
            paths: &[],
            command: None,
        };
        let mut rules = AlwaysRules::default();
        let table = [
            (Mode::Ask, Some(Decision::Ask(Reach::WithinRoots)), true),
            (
                Mode::AcceptEdits,
                Some(Decision::Ask(Reach::WithinRoots)),
                true,
            ),
            (Mode::Plan, None, false),
            (Mode::Bypass, Some(Decision::Allow), true),
        ];
        for (mode, expected, offered) in table {
            let decision = decide(mode, &subject, &plan, &rules);
            match expected {
                Some(expected) => assert_eq!(decision, expected, "{mode:?}"),
                None => assert!(
                    matches!(decision, Decision::Deny(_)),
                    "{mode:?}: {decision:?}"
                ),
            }
            assert_eq!(offers(mode, MCP_ACCESS), offered, "{mode:?}");
        }
        // "Allow always" is keyed by the tool's name and never lifts plan mode.
        rules.remember(subject.rule_key(), PermissionAnswer::AllowAlways);
        assert_eq!(decide(Mode::Ask, &subject, &plan, &rules), Decision::Allow);
        assert!(matches!(
            decide(Mode::Plan, &subject, &plan, &rules),
            Decision::Deny(_)
        ));
        let other = Subject {
            tool: "fixture__fail",
            ..subject
        };
        assert_eq!(
            decide(Mode::Ask, &other, &plan, &rules),
            Decision::Ask(Reach::WithinRoots)
        );
    }
}

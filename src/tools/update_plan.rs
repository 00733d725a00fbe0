//! `update_plan`: the model publishes its checklist; the client shows it as the plan
//! (replacing the previous one).

use async_trait::async_trait;
use hearth_backend::ToolSpec;
use hearth_conversation::{Access, AgentEvent, PlanEntry, PlanStatus, ToolKind};
use serde::Deserialize;
use serde_json::json;

use super::args;
use super::handler::{Prepared, ToolContext, ToolError, ToolHandler, ToolOutput};

pub const NAME: &str = "update_plan";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    #[serde(alias = "todos")]
    entries: Vec<Entry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    content: String,
    status: PlanStatus,
}

pub struct UpdatePlan;

#[async_trait]
impl ToolHandler for UpdatePlan {
    fn name(&self) -> &str {
        NAME
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: include_str!("../../prompts/tools/update_plan.md").into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "entries": {
                        "type": "array",
                        "description": "The whole checklist, in order; replaces the previous one",
                        "items": {
                            "type": "object",
                            "properties": {
                                "content": {"type": "string", "description": "One step, short"},
                                "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                            },
                            "required": ["content", "status"],
                            "additionalProperties": false
                        }
                    }
                },
                "required": ["entries"],
                "additionalProperties": false
            }),
        }
    }

    fn access(&self) -> Access {
        Access::SessionOnly
    }

    async fn prepare(
        &self,
        args: &serde_json::Value,
        _ctx: &ToolContext<'_>,
    ) -> Result<Prepared, ToolError> {
        let args: Args = args::parse(NAME, args)?;
        if let Some(i) = args
            .entries
            .iter()
            .position(|e| e.content.trim().is_empty())
        {
            return Err(ToolError::Model(format!(
                "update_plan: entry {} has empty content",
                i + 1
            )));
        }
        Ok(Prepared {
            title: "Update plan".into(),
            kind: ToolKind::Think,
            locations: Vec::new(),
            access: Access::SessionOnly,
            paths: Vec::new(),
            command: None,
            preview: Vec::new(),
        })
    }

    async fn run(
        &self,
        args: &serde_json::Value,
        _prepared: &Prepared,
        ctx: &ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let args: Args = args::parse(NAME, args)?;
        let entries: Vec<PlanEntry> = args
            .entries
            .into_iter()
            .map(|e| PlanEntry {
                content: e.content.trim().to_owned(),
                status: e.status,
            })
            .collect();
        let count = |s: PlanStatus| entries.iter().filter(|e| e.status == s).count();
        let summary = format!(
            "Plan updated: {} ({} completed, {} in progress, {} pending).",
            args::plural(entries.len(), "entry", "entries"),
            count(PlanStatus::Completed),
            count(PlanStatus::InProgress),
            count(PlanStatus::Pending)
        );
        ctx.client.send(AgentEvent::Plan {
            entries: entries.clone(),
        });
        Ok(ToolOutput {
            for_model: summary,
            content: Vec::new(),
            raw_output: json!({"entries": entries}),
            failed: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_support::Fixture;

    #[tokio::test]
    async fn publishes_the_plan() {
        let fx = Fixture::new();
        let args = json!({"entries": [
            {"content": " Read the CLI ", "status": "completed"},
            {"content": "Add --verbose", "status": "in_progress"},
            {"content": "Run tests", "status": "pending"}
        ]});
        let (prepared, out) = fx.call(&UpdatePlan, args).await.unwrap();
        assert_eq!(prepared.access, Access::SessionOnly);
        assert_eq!(
            out.for_model,
            "Plan updated: 3 entries (1 completed, 1 in progress, 1 pending)."
        );
        let entry = |content: &str, status| PlanEntry {
            content: content.into(),
            status,
        };
        assert_eq!(
            fx.front.events(),
            [AgentEvent::Plan {
                entries: vec![
                    entry("Read the CLI", PlanStatus::Completed),
                    entry("Add --verbose", PlanStatus::InProgress),
                    entry("Run tests", PlanStatus::Pending),
                ]
            }]
        );
    }

    #[tokio::test]
    async fn bad_entries_are_told_to_the_model() {
        let fx = Fixture::new();
        let cases = [
            (
                json!({"entries": [{"content": "a", "status": "done"}]}),
                "at `entries[0].status`: unknown variant `done`",
            ),
            (
                json!({"entries": [{"content": " ", "status": "pending"}]}),
                "entry 1 has empty content",
            ),
            (
                json!({"entries": "a, b"}),
                "at `entries`: invalid type: string",
            ),
        ];
        for (args, want) in cases {
            let err = fx.model_error(&UpdatePlan, args.clone()).await;
            assert!(err.contains(want), "{args}: {err}");
        }
        assert!(fx.front.events().is_empty());
    }
}

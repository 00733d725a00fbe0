//! What the context commands do to a session, the same for every front end: `/compact`,
//! `/clear` and `/context`.

use hearth_conversation::AgentEvent;

use super::compact::{CompactError, summarise};
use super::core::AgentCore;
use super::request_fit::{CallHolding, RequestShape, offered_tools};
use super::session::{Session, TurnTicket};
use super::turn::TurnError;
use crate::context::{ContextReport, TokenCounter, on_demand_span};
use crate::host::ClientOps;
use crate::parse::resolve_format;
use crate::sync::lock;

/// What `/compact` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compacted {
    /// History entries the summary stands in for.
    pub covers: usize,
    /// Tokens of the summary.
    pub summary_tokens: usize,
    /// Prompt tokens of the next request before and after.
    pub before: usize,
    pub after: usize,
}

/// Why a context command could not run.
#[derive(Debug, thiserror::Error)]
pub enum ContextCommandError {
    /// No model, or its endpoint is gone.
    #[error(transparent)]
    Turn(#[from] TurnError),
    #[error(transparent)]
    Compact(#[from] CompactError),
}

impl AgentCore {
    /// `/compact [focus]`: summarises everything before the last round now. Runs as a turn of
    /// the session (so it waits for a running one and can be cancelled), and saves the summary.
    pub async fn compact(
        &self,
        session: &Session,
        ticket: &TurnTicket,
        focus: Option<&str>,
        client: &dyn ClientOps,
    ) -> Result<Compacted, ContextCommandError> {
        let history = session.history().await;
        let (model, endpoint) = self.selected(session)?;
        let system_prompt = self.system_prompt_for(session)?;
        let context = self.contexts.get(endpoint, &model).await;
        let specs = offered_tools(
            self.tools_of(session),
            session.settings().mode,
            &context,
            &self.config.agent.assists,
        );
        let shape = RequestShape {
            endpoint,
            model: &model.model,
            format: resolve_format(endpoint.config.tool_format, &model.model),
            system_prompt: &system_prompt,
            tools: &specs,
            context: &context,
            constrain_calls: CallHolding::Off,
        };
        let state = lock(session.context()).clone();
        let visible = history.get(state.start..).unwrap_or_default();
        let covers = on_demand_span(visible, state.visible_summary().as_ref())
            .ok_or(CompactError::NothingToCompact)?;
        let budget = shape.budget();
        let before = shape.fit(&history, &state, budget).projection.tokens;
        client.send(AgentEvent::Notice {
            text: format!("compacting: summarising the first {covers} messages"),
        });
        let summary = summarise(
            &shape,
            &history,
            &state,
            covers,
            focus,
            budget,
            &ticket.cancel,
        )
        .await?;
        let summary_tokens = shape
            .context
            .counter(endpoint.backend.as_ref(), &model.model)
            .count(&summary.text);
        let updated = {
            let mut context = lock(session.context());
            context.summary = Some(summary);
            context.clone()
        };
        let fitted = shape.fit(&history, &updated, budget);
        lock(session.context()).last_report = Some(fitted.report.clone());
        if let Some(persist) = session.persistence() {
            persist.save_context(&updated).await;
        }
        client.send(AgentEvent::Usage {
            used: fitted.projection.tokens as u64,
            size: u64::from(budget.window),
        });
        Ok(Compacted {
            covers,
            summary_tokens,
            before,
            after: fitted.projection.tokens,
        })
    }

    /// `/clear`: the model starts afresh; the session, its stored history and its settings
    /// stay. Waits for a running turn to finish with the history.
    pub async fn clear_context(&self, session: &Session) {
        let history = session.history().await;
        let updated = {
            let mut context = lock(session.context());
            context.clear(history.len());
            context.clone()
        };
        drop(history);
        if let Some(persist) = session.persistence() {
            persist.save_context(&updated).await;
        }
    }

    /// `/context`: what the next request would carry, projected now.
    pub async fn context_report(&self, session: &Session) -> Result<ContextReport, TurnError> {
        let history = session.history().await;
        let (model, endpoint) = self.selected(session)?;
        let system_prompt = self.system_prompt_for(session)?;
        let context = self.contexts.get(endpoint, &model).await;
        let specs = offered_tools(
            self.tools_of(session),
            session.settings().mode,
            &context,
            &self.config.agent.assists,
        );
        let shape = RequestShape {
            endpoint,
            model: &model.model,
            format: resolve_format(endpoint.config.tool_format, &model.model),
            system_prompt: &system_prompt,
            tools: &specs,
            context: &context,
            constrain_calls: CallHolding::Off,
        };
        let state = lock(session.context()).clone();
        Ok(shape.fit(&history, &state, shape.budget()).report)
    }
}

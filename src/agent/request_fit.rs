//! Fitting one request into the model's window: project the visible history into the budget
//! and build the request from the projection. The stored history is never touched.

use hearth_backend::{CompletionRequest, ContentPart, ToolSpec};
use hearth_conversation::{HistoryEntry, Mode};

use super::catalog::Endpoint;
use super::model_context::ModelContext;
use super::request::build_request;
use super::session_context::SessionContext;
use crate::config::{Assist, Assists};
use crate::context::{
    Budget, ContextReport, MESSAGE_OVERHEAD, Projection, TokenCounter, describe, project,
};
use crate::parse::{ResolvedFormat, render_messages};
use crate::tools::{COMPACT_WINDOW, ToolRegistry, compact_specs};

/// The tools a request offers: the mode's, in their compact form for a small window (the
/// compact_tools assist).
pub fn offered_tools(
    registry: &ToolRegistry,
    mode: Mode,
    context: &ModelContext,
    assists: &Assists,
) -> Vec<ToolSpec> {
    let specs = registry.specs_for_mode(mode);
    if assists.on(Assist::CompactTools) && context.window_tokens() <= COMPACT_WINDOW {
        compact_specs(specs)
    } else {
        specs
    }
}

/// Tokens a chat template writes around a native tool list beyond the tools' own JSON: the
/// preamble that explains the call format (Qwen2.5's is about 90 tokens) and, per tool, the
/// `{"type": "function", "function": …}` wrapper. Counted whatever the counter, since even an
/// exact tokenizer never sees them.
const NATIVE_TOOLS_PREAMBLE: usize = 100;
const NATIVE_TOOL_WRAPPER: usize = 10;

/// What a request is built from, besides the history.
pub struct RequestShape<'a> {
    pub endpoint: &'a Endpoint,
    pub model: &'a str,
    pub format: ResolvedFormat,
    pub system_prompt: &'a str,
    pub tools: &'a [ToolSpec],
    pub context: &'a ModelContext,
    /// Which of the model's Hermes calls a backend that samples tokens itself may hold to the
    /// tools.
    pub constrain_calls: CallHolding,
}

/// Which Hermes calls the local engine holds to the declared tools with its grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallHolding {
    Off,
    /// Those the model opens with `<tool_call>` (the call_grammar assist).
    Tagged,
    /// Those, and a line that opens `{"name"` (call_grammar and bare_calls).
    TaggedAndBare,
}

impl CallHolding {
    pub fn from_assists(assists: &Assists) -> Self {
        match (
            assists.on(Assist::CallGrammar),
            assists.on(Assist::BareCalls),
        ) {
            (false, _) => Self::Off,
            (true, false) => Self::Tagged,
            (true, true) => Self::TaggedAndBare,
        }
    }
}

/// A request that fits, and how it was fitted.
pub struct Fitted {
    pub request: CompletionRequest,
    pub projection: Projection,
    pub budget: Budget,
    pub report: ContextReport,
}

impl RequestShape<'_> {
    /// The budget of a request for this model.
    pub fn budget(&self) -> Budget {
        self.context.budget(self.endpoint.config.max_tokens)
    }

    /// Tokens of the system message with its tool block (or the native tool list).
    pub fn system_tokens(&self, counter: &dyn TokenCounter) -> usize {
        let system = render_messages(self.format, self.system_prompt, self.tools, &[]);
        let text: usize = system
            .iter()
            .flat_map(|m| &m.content)
            .map(|part| match part {
                ContentPart::Text { text } => counter.count(text),
                ContentPart::Image { .. } => counter.image_tokens(),
            })
            .sum();
        let native_tools = if self.format == ResolvedFormat::Native && !self.tools.is_empty() {
            let specs: usize = self
                .tools
                .iter()
                .map(|t| {
                    counter.count(&serde_json::to_string(t).unwrap_or_default())
                        + NATIVE_TOOL_WRAPPER
                })
                .sum();
            NATIVE_TOOLS_PREAMBLE + specs
        } else {
            0
        };
        text + native_tools + MESSAGE_OVERHEAD * system.len().max(1)
    }

    /// Projects what `state` leaves visible of `history` into `budget` and builds the request.
    pub fn fit(&self, history: &[HistoryEntry], state: &SessionContext, budget: Budget) -> Fitted {
        let counter = self
            .context
            .counter(self.endpoint.backend.as_ref(), self.model);
        let visible = history.get(state.start..).unwrap_or_default();
        let summary = state.visible_summary();
        let projection = project(
            visible,
            self.system_tokens(&counter),
            &budget,
            &counter,
            summary.as_ref(),
        );
        if !projection.fits {
            tracing::warn!(
                tokens = projection.tokens,
                budget = budget.available(),
                "the system prompt and the user messages alone exceed the budget"
            );
        }
        let mut request = build_request(
            &self.endpoint.config,
            self.model,
            self.format,
            self.system_prompt,
            self.tools,
            &projection.entries,
        );
        request.max_tokens = Some(budget.max_tokens);
        request.context_window = Some(self.context.window_tokens());
        if self.constrain_calls != CallHolding::Off && self.format == ResolvedFormat::Hermes {
            request.hermes_tools = self.tools.to_vec();
            request.hold_bare_calls = self.constrain_calls == CallHolding::TaggedAndBare;
        }
        let report = describe(&projection, &budget);
        Fitted {
            request,
            projection,
            budget,
            report,
        }
    }
}

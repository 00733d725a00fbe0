//! The turn loop's side of context fitting: before each request, project the history (and
//! summarise it once it passes the threshold); after a "prompt too long" from the server,
//! learn from it (its own count and window, where it states them) and retry once.

use hearth_backend::BackendError;
use hearth_conversation::{AgentEvent, HistoryEntry};

use super::compact::{CompactError, summarise};
use super::request_fit::{Fitted, RequestShape};
use super::round::Round;
use super::turn_context::TurnContext;
use crate::context::{TextProfile, TokenCounter, compaction_span, should_compact};
use crate::sync::lock;

/// Share of our own count by which a retry after an overflow tightens the budget.
const OVERFLOW_TIGHTEN_DIVISOR: usize = 8;

/// Fitting state that lasts one turn.
#[derive(Debug, Default)]
pub struct Fitting {
    /// An automatic summary failed, or freed no room, this turn: elision alone carries on,
    /// without a summary request every round (the compaction loop peers fall into when each
    /// tool output alone fills the window).
    compaction_stopped: bool,
    /// The server rejected a prompt as too long and the retry was made.
    overflow_retried: bool,
    /// Tokens taken off the budget after that rejection.
    tightened_by: u32,
}

impl Fitting {
    /// The request for the next round, fitted to the window; summarises first when the
    /// conversation has reached the compaction threshold.
    pub async fn prepare(
        &mut self,
        ctx: &TurnContext<'_>,
        shape: &RequestShape<'_>,
        history: &[HistoryEntry],
    ) -> Fitted {
        let budget = shape.budget().tightened(self.tightened_by);
        let state = lock(ctx.context).clone();
        let mut fitted = shape.fit(history, &state, budget);
        let pressing = should_compact(
            fitted.projection.unelided_tokens,
            budget.window,
            ctx.settings.compact_threshold,
        );
        let visible = history.get(state.start..).unwrap_or_default();
        let span = compaction_span(
            visible,
            &fitted.projection,
            state.visible_summary().as_ref(),
        );
        if let (true, false, Some(covers)) = (pressing, self.compaction_stopped, span) {
            ctx.client.send(AgentEvent::Notice {
                text: format!(
                    "compacting: the conversation takes {} of {} tokens; summarising its first {covers} messages",
                    fitted.projection.unelided_tokens, budget.window
                ),
            });
            match summarise(shape, history, &state, covers, None, budget, ctx.cancel).await {
                Ok(summary) => {
                    let summary_tokens = shape
                        .context
                        .counter(shape.endpoint.backend.as_ref(), shape.model)
                        .count(&summary.text);
                    let before = fitted.projection.tokens;
                    let updated = {
                        let mut context = lock(ctx.context);
                        context.summary = Some(summary);
                        context.clone()
                    };
                    fitted = shape.fit(history, &updated, budget);
                    self.compaction_stopped = fitted.projection.tokens >= before;
                    ctx.client.send(AgentEvent::Notice {
                        text: format!(
                            "compacted: a {summary_tokens}-token summary now stands in for them; \
                             the prompt went from {before} to {} tokens",
                            fitted.projection.tokens
                        ),
                    });
                }
                Err(CompactError::Cancelled) => {}
                Err(err) => {
                    self.compaction_stopped = true;
                    ctx.client.send(AgentEvent::Notice {
                        text: format!(
                            "compaction failed ({err}); older tool outputs are left out instead"
                        ),
                    });
                }
            }
        }
        lock(ctx.context).last_report = Some(fitted.report.clone());
        fitted
    }

    /// Whether to retry the round after `err`: once per turn, when the server rejected the
    /// prompt as too long before answering anything. The model's context learns from the
    /// rejection for every later request: the prompt's size in the server's own tokens and its
    /// window where the server stated them (the retry then fits without guessing), else a
    /// count 15% higher and, for this turn, a budget an eighth tighter.
    pub fn retry_after(
        &mut self,
        ctx: &TurnContext<'_>,
        shape: &RequestShape<'_>,
        err: &BackendError,
        round: &Round,
        (profile, estimated): (&TextProfile, usize),
    ) -> bool {
        let answered =
            !round.text.is_empty() || !round.reasoning.is_empty() || !round.calls.is_empty();
        let BackendError::ContextWindowExceeded {
            prompt_tokens,
            window,
            ..
        } = err
        else {
            return false;
        };
        if self.overflow_retried || answered {
            return false;
        }
        self.overflow_retried = true;
        let learned = shape
            .context
            .record_overflow(profile, estimated, *prompt_tokens, *window);
        let text = match (learned, prompt_tokens) {
            (true, Some(reported)) => format!(
                "the server counts this prompt as {reported} tokens where hearth estimated \
                 {estimated}; counting as it does from now on and retrying once"
            ),
            // An exact count that the server still finds too long: the template or the
            // server adds what we cannot count; keep that much more room.
            (false, Some(server)) => {
                let excess = (*server as usize).saturating_sub(estimated) + 64;
                self.tightened_by = u32::try_from(excess).unwrap_or(u32::MAX);
                format!(
                    "the server counts this prompt as {server} tokens, {excess} more than \
                     hearth's count with room to spare; retrying once with that much less"
                )
            }
            (_, None) => {
                let tighten = (estimated / OVERFLOW_TIGHTEN_DIVISOR).max(256);
                self.tightened_by = u32::try_from(tighten).unwrap_or(u32::MAX);
                format!(
                    "the server found the prompt too long (it counts tokens differently); \
                     retrying once with {tighten} tokens less"
                )
            }
        };
        ctx.client.send(AgentEvent::Notice { text });
        true
    }
}

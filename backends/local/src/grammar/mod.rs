//! Grammar-constrained tool calls: once the model opens `<tool_call>`, only tokens that keep
//! the call a declared tool's name with schema-valid JSON arguments, then `</tool_call>`, can be
//! sampled. The grammar is lazy, as llama.cpp's is: text outside a call is never touched, so the
//! model still chooses freely whether to call and what to say.

mod bare;
mod constraint;
mod matcher;
mod shape;
mod text_only;
mod vocab;

pub(crate) use constraint::CallConstraint;
pub(crate) use text_only::TextOnly;
#[cfg(test)]
pub(crate) use vocab::TokenKind;
pub(crate) use vocab::Vocab;

use std::sync::Arc;

use hearth_backend::ToolSpec;

use shape::Shapes;

/// What opens a call in the Hermes format.
pub(crate) const OPEN_TAG: &[u8] = b"<tool_call>";
/// What must follow the call's JSON.
pub(crate) const CLOSE_TAG: &[u8] = b"</tool_call>";

/// The call grammar of one request: its tools' shapes and the model's vocabulary.
pub(crate) struct CallGrammar {
    shapes: Shapes,
    vocab: Arc<Vocab>,
    /// Whether a call written without the tags (a line that opens `{"name"`) is held too.
    bare: bool,
}

impl CallGrammar {
    /// `None` when there is nothing to call.
    pub fn new(tools: &[ToolSpec], vocab: Arc<Vocab>) -> Option<Self> {
        (!tools.is_empty()).then(|| Self {
            shapes: Shapes::for_calls(tools),
            vocab,
            bare: false,
        })
    }

    /// Also holds calls written without the tags, and ends the answer when one closes: small
    /// models (Qwen2.5-Coder 0.5B and 1.5B) write their calls as bare JSON lines far more often
    /// than inside `<tool_call>`, to invented tools, with keys copied from the schemas, and
    /// then a dozen more such lines without waiting for a result.
    pub fn holding_bare_calls(mut self, bare: bool) -> Self {
        self.bare = bare;
        self
    }
}

//! One generation's view of the call grammar: it watches the text for the opening tag, then
//! says which tokens may come next until the call is closed.

use super::matcher::Matcher;
use super::vocab::TokenKind;
use super::{CLOSE_TAG, CallGrammar, OPEN_TAG};

/// Bytes of text kept to spot an opening tag split across tokens (and the byte before it).
const TAIL: usize = 32;

pub(crate) struct CallConstraint<'a> {
    grammar: &'a CallGrammar,
    /// The last bytes written outside a call.
    tail: Vec<u8>,
    active: Option<Active>,
    /// Tokens chosen under the grammar, and how many of them it had to overrule.
    pub constrained: usize,
    pub overruled: usize,
}

struct Active {
    matcher: Matcher,
    /// Whether a token may start with each byte: most candidates are refused on this alone.
    first: [bool; 256],
}

impl Active {
    fn new(matcher: Matcher, grammar: &CallGrammar) -> Self {
        let mut first = [false; 256];
        for (b, slot) in first.iter_mut().enumerate() {
            *slot = matcher.feed(&grammar.shapes, &[b as u8]).is_some();
        }
        Self { matcher, first }
    }
}

impl<'a> CallConstraint<'a> {
    /// `prompt_tail` is the end of the prompt: one that ends inside an opened call (an answer
    /// prefilled up to `<tool_call>`) starts constrained.
    pub fn new(grammar: &'a CallGrammar, prompt_tail: &[u8]) -> Self {
        let mut constraint = Self {
            grammar,
            tail: Vec::with_capacity(TAIL * 2),
            active: None,
            constrained: 0,
            overruled: 0,
        };
        constraint.watch(prompt_tail);
        constraint
    }

    pub fn is_active(&self) -> bool {
        self.active.is_some()
    }

    /// Whether `id` may be sampled now.
    pub fn allows(&self, id: u32) -> bool {
        let Some(active) = &self.active else {
            return true;
        };
        let vocab = &self.grammar.vocab;
        let bytes = vocab.bytes(id);
        let fits = |bytes: &[u8]| active.matcher.feed(&self.grammar.shapes, bytes).is_some();
        match vocab.kind(id) {
            TokenKind::End => false,
            TokenKind::Added => bytes == CLOSE_TAG && fits(bytes),
            TokenKind::Text => {
                !bytes.is_empty() && active.first[usize::from(bytes[0])] && fits(bytes)
            }
        }
    }

    /// Records the sampled token; `overruled` says the grammar refused the model's first choice.
    pub fn accept(&mut self, id: u32, overruled: bool) {
        let bytes = self.grammar.vocab.bytes(id);
        let Some(active) = &self.active else {
            return self.watch(bytes);
        };
        self.constrained += 1;
        if overruled {
            self.overruled += 1;
        }
        match active.matcher.feed(&self.grammar.shapes, bytes) {
            Some(matcher) if !matcher.is_done() => {
                self.active = Some(Active::new(matcher, self.grammar));
            }
            // Closed, or a token the grammar did not allow (nothing fitted): free text again.
            _ => self.active = None,
        }
    }

    /// No token fits (the vocabulary lacks what the grammar needs): the rest of the call is
    /// left to the parser's repairs.
    pub fn abandon(&mut self) {
        self.active = None;
    }

    fn watch(&mut self, bytes: &[u8]) {
        let before = self.tail.len();
        self.tail.extend_from_slice(bytes);
        let from = before.saturating_sub(OPEN_TAG.len() - 1);
        let found = self.tail[from..]
            .windows(OPEN_TAG.len())
            .rposition(|w| w == OPEN_TAG)
            .map(|i| from + i);
        if let Some(start) = found
            // A tag in inline code is prose about the format, not a call.
            && (start == 0 || self.tail[start - 1] != b'`')
        {
            let rest = &self.tail[start + OPEN_TAG.len()..];
            let opened =
                Matcher::new(&self.grammar.shapes, CLOSE_TAG).feed(&self.grammar.shapes, rest);
            self.tail.clear();
            if let Some(matcher) = opened {
                self.active = Some(Active::new(matcher, self.grammar));
            }
            return;
        }
        if self.tail.len() > TAIL {
            self.tail.drain(..self.tail.len() - TAIL);
        }
    }
}

#[cfg(test)]
#[path = "constraint_tests.rs"]
mod tests;

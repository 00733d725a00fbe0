//! One generation's view of the call grammar: it watches the text for the opening tag (or, when
//! the grammar holds bare calls, a line that opens `{"name"`), then says which tokens may come
//! next until the call is closed.

use super::bare::{OPENING_BYTES, line_call, name_written, opening_call};
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
    /// The answer so far, while it may still open with a bare call (only when the grammar
    /// holds them, and only for its first bytes).
    opening: Option<Vec<u8>>,
    /// A call written without the tags was closed: the answer ends there.
    bare_call_closed: bool,
    /// Tokens chosen under the grammar, and how many of them it had to overrule.
    pub constrained: usize,
    pub overruled: usize,
}

struct Active {
    matcher: Matcher,
    /// Whether a token may start with each byte: most candidates are refused on this alone.
    first: [bool; 256],
    held: Held,
}

/// How a call was opened.
#[derive(Clone, PartialEq)]
enum Held {
    /// By `<tool_call>`: it ends at `</tool_call>`.
    Tagged,
    /// Without the tag: it ends at the closing brace, and so does the answer.
    Bare,
    /// Without the tag, not yet held: these are the bytes since the brace, until the model
    /// has written the name itself. Should it want a name the grammar refuses, the
    /// object is not a call and is let go.
    Tentative(Vec<u8>),
}

impl Active {
    fn new(matcher: Matcher, grammar: &CallGrammar, held: Held) -> Self {
        let mut first = [false; 256];
        for (b, slot) in first.iter_mut().enumerate() {
            *slot = matcher.feed(&grammar.shapes, &[b as u8]).is_some();
        }
        Self {
            matcher,
            first,
            held,
        }
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
            opening: None,
            bare_call_closed: false,
            constrained: 0,
            overruled: 0,
        };
        constraint.watch(prompt_tail);
        if grammar.bare && constraint.active.is_none() {
            constraint.opening = Some(Vec::with_capacity(OPENING_BYTES));
        }
        constraint
    }

    pub fn is_active(&self) -> bool {
        self.active.is_some()
    }

    /// A bare call whose name the model has not written yet: should the model want a token the
    /// grammar refuses, [`abandon`](Self::abandon) it rather than overrule (it is a JSON record,
    /// not a call).
    pub fn is_tentative(&self) -> bool {
        self.active
            .as_ref()
            .is_some_and(|a| matches!(a.held, Held::Tentative(_)))
    }

    /// True once a call written without the tags is complete: the generation should end, so
    /// the call runs before the model writes another.
    pub fn bare_call_closed(&self) -> bool {
        self.bare_call_closed
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
        let held = match &active.held {
            Held::Tentative(object) => {
                let object = [object.as_slice(), bytes].concat();
                if name_written(&object) {
                    Held::Bare
                } else {
                    Held::Tentative(object)
                }
            }
            held => held.clone(),
        };
        match active.matcher.feed(&self.grammar.shapes, bytes) {
            Some(matcher) if !matcher.is_done() => {
                self.active = Some(Active::new(matcher, self.grammar, held));
            }
            Some(_) => {
                self.active = None;
                self.bare_call_closed = held != Held::Tagged;
            }
            // A token the grammar did not allow (nothing fitted): free text again.
            None => self.active = None,
        }
    }

    /// Lets the call go: no token fits (the vocabulary lacks what the grammar needs), or a
    /// tentative one names no declared tool. The rest is left to the parser's repairs.
    pub fn abandon(&mut self) {
        self.active = None;
    }

    /// Holds the call `matcher` expects, which `written` opened; one they rule out is left free.
    fn open(&mut self, matcher: Matcher, written: &[u8], held: Held) {
        if let Some(matcher) = matcher.feed(&self.grammar.shapes, written) {
            self.active = Some(Active::new(matcher, self.grammar, held));
        }
    }

    /// A bare call from its `{`: tentative until the model has written the name itself.
    fn open_bare(&mut self, object: &[u8]) {
        let held = if name_written(object) {
            Held::Bare
        } else {
            Held::Tentative(object.to_vec())
        };
        self.open(Matcher::new(&self.grammar.shapes, b""), object, held);
    }

    fn watch(&mut self, bytes: &[u8]) {
        if let Some(mut answer) = self.opening.take() {
            answer.extend_from_slice(bytes);
            if let Some(start) = opening_call(&answer) {
                self.tail.clear();
                return self.open_bare(&answer[start..]);
            }
            if answer.len() < OPENING_BYTES {
                self.opening = Some(answer);
            }
        }
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
            let tail = std::mem::take(&mut self.tail);
            self.opening = None;
            let matcher = Matcher::new(&self.grammar.shapes, CLOSE_TAG);
            return self.open(matcher, &tail[start + OPEN_TAG.len()..], Held::Tagged);
        }
        if self.grammar.bare
            && let Some(start) = line_call(&self.tail)
        {
            let tail = std::mem::take(&mut self.tail);
            return self.open_bare(&tail[start..]);
        }
        if self.tail.len() > TAIL {
            self.tail.drain(..self.tail.len() - TAIL);
        }
    }
}

#[cfg(test)]
#[path = "constraint_tests.rs"]
mod tests;

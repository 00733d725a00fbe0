//! An answer that must be text: the agent asks for one when a small model keeps calling a tool
//! whose result it already has, or answers with nothing. No call may open (the tag, a line that
//! starts a JSON object, or `{"name"` anywhere: how these models write bare calls), and the
//! answer may not end, or start, blank.

use std::sync::Arc;

use super::OPEN_TAG;
use super::vocab::{TokenKind, Vocab};

pub(crate) struct TextOnly {
    vocab: Arc<Vocab>,
    /// Nothing but blanks written yet.
    blank: bool,
    /// The current line holds nothing but blanks yet.
    line_blank: bool,
    /// The last bytes written, to spot a tag split across tokens.
    tail: Vec<u8>,
}

/// Bytes kept to spot a tag or a call object split across tokens.
const TAIL: usize = 16;

/// `{`, blanks, then `"name`: a call object, wherever it is (models dodge a refused `"name"`
/// with `"name "`).
fn opens_call_object(written: &[u8]) -> bool {
    const KEY: &[u8] = b"\"name";
    written
        .windows(KEY.len())
        .enumerate()
        .any(|(i, w)| w == KEY && written[..i].iter().rev().find(|&&b| !is_blank(b)) == Some(&b'{'))
}

fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

impl TextOnly {
    pub fn new(vocab: Arc<Vocab>) -> Self {
        Self {
            vocab,
            blank: true,
            line_blank: true,
            tail: Vec::new(),
        }
    }

    /// Whether `id` may be sampled now.
    pub fn allows(&self, id: u32) -> bool {
        let bytes = self.vocab.bytes(id);
        match self.vocab.kind(id) {
            TokenKind::End => !self.blank,
            TokenKind::Added => false,
            TokenKind::Text => {
                if bytes.is_empty() || (self.blank && bytes.iter().all(|&b| is_blank(b))) {
                    return false;
                }
                let mut line_blank = self.line_blank;
                for &b in bytes {
                    if line_blank && b == b'{' {
                        return false;
                    }
                    line_blank = b == b'\n' || (line_blank && is_blank(b));
                }
                let written = [self.tail.as_slice(), bytes].concat();
                !written.windows(OPEN_TAG.len()).any(|w| w == OPEN_TAG)
                    && !opens_call_object(&written)
            }
        }
    }

    /// Records the sampled token.
    pub fn accept(&mut self, id: u32) {
        for &b in self.vocab.bytes(id) {
            self.blank &= is_blank(b);
            self.line_blank = b == b'\n' || (self.line_blank && is_blank(b));
        }
        self.tail.extend_from_slice(self.vocab.bytes(id));
        let keep = TAIL;
        if self.tail.len() > keep {
            self.tail.drain(..self.tail.len() - keep);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TokenKind::{Added, End, Text};

    const TOKENS: &[(&str, TokenKind)] = &[
        ("<|im_end|>", End),
        ("<tool_call>", Added),
        ("\n\n", Text),
        ("The", Text),
        (" answer", Text),
        ("{\"", Text),
        (" {", Text),
        ("\n", Text),
        ("<tool", Text),
        ("_call>", Text),
        ("name", Text),
        ("nam", Text),
        ("\"", Text),
        (">", Text),
        ("", Text),
    ];

    fn id(text: &str) -> u32 {
        TOKENS.iter().position(|(t, _)| *t == text).unwrap() as u32
    }

    fn text_only() -> TextOnly {
        TextOnly::new(Arc::new(Vocab::from_entries(TOKENS)))
    }

    #[test]
    fn the_answer_may_not_open_a_call_nor_end_or_start_blank() {
        let mut t = text_only();
        for refused in ["<|im_end|>", "\n\n", "<tool_call>", "{\"", " {", ""] {
            assert!(!t.allows(id(refused)), "{refused:?} at the start");
        }
        t.accept(id("The"));
        assert!(t.allows(id("<|im_end|>")), "the end once something is said");
        assert!(
            t.allows(id("\n\n")) && t.allows(id(" {")),
            "braces inside a line"
        );
        t.accept(id("\n"));
        assert!(!t.allows(id(" {")), "a line that opens an object");
        t.accept(id("<tool"));
        assert!(!t.allows(id("_call>")), "a tag split across tokens");
        assert!(t.allows(id(" answer")));
        t.accept(id(">"));
        t.accept(id("{\""));
        assert!(t.allows(id("nam")), "`{{\"nam` is not a call yet");
        assert!(
            !t.allows(id("name")),
            "a call object in the middle of a line"
        );
    }
}

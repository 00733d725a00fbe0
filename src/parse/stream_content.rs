//! The content-mode steps of [`StreamParser`]: visible text, and the markup that may open a call
//! block (`<tool_call>`, wrappers, bare `<function=`, fences, bare JSON at the start).

use memchr::{memchr, memchr2};

use super::super::block::BlockKind;
use super::super::function_tags::ATTR_OPEN;
use super::super::tags::{
    ALT, CALL_CLOSE, CALL_OPEN, CUT, FENCE, FUNCTION_OPEN, MAX_GAP, MAX_LANG, Match, THINK_CLOSE,
    THINK_OPEN, match_tag,
};
use super::{Mode, NameCheck, StreamParser, Wrap};

/// What follows a call inside a fence or wrapper.
enum WrapClose {
    Hold,
    /// Markup up to here (the closer, or whitespace before the next call).
    Markup(usize),
    /// The next call starts right here.
    Call,
    /// Something else: the wrapper is forgotten and the text read as usual.
    No,
}

impl StreamParser {
    pub(super) fn content_step(&mut self, input: &str, i: usize, eof: bool) -> Option<usize> {
        if self.s.in_code {
            return self.code_span_step(input, i, eof);
        }
        if let Some(wrap) = self.s.wrap.filter(|w| w.after_call) {
            match self.wrap_close(input, i, eof, wrap.close) {
                WrapClose::Hold => return None,
                WrapClose::Markup(end) => return Some(end),
                WrapClose::Call => {}
                WrapClose::No => self.s.wrap = None,
            }
        }
        let rest = &input.as_bytes()[i..];
        let off = if !self.calls {
            memchr(b'<', rest)
        } else if self.s.visible {
            memchr2(b'<', b'`', rest)
        } else {
            rest.iter()
                .position(|c| matches!(c, b'<' | b'`' | b'{' | b'['))
        };
        let Some(off) = off else {
            self.emit_text(&input[i..]);
            return Some(input.len());
        };
        let p = i + off;
        if p > i {
            // Text first; the markup is decided in the next step (which may hold it back).
            self.emit_text(&input[i..p]);
            return Some(p);
        }
        match input.as_bytes()[p] {
            b'<' => self.content_tag(input, p, eof),
            b'`' => self.content_fence(input, p, eof),
            _ => self.content_bare(input, p, eof),
        }
    }

    fn content_tag(&mut self, input: &str, p: usize, eof: bool) -> Option<usize> {
        let rest = &input.as_bytes()[p..];
        let mut partial = false;
        let mut undecided = false;
        let mut check = |tag: &str| {
            let m = match_tag(rest, tag);
            partial |= m == Match::Partial;
            m == Match::Full
        };
        if check(THINK_OPEN) {
            self.s.mode = Mode::Think;
            self.s.trim_reasoning = true;
            return Some(self.consume(p, THINK_OPEN.len()));
        }
        if check(THINK_CLOSE) {
            // A stray `</think>` (the prompt opened the block but the config said closed).
            return Some(self.consume(p, THINK_CLOSE.len()));
        }
        if self.calls {
            if check(CALL_OPEN) {
                return Some(self.open_block(
                    BlockKind::ToolCall,
                    CALL_CLOSE,
                    input,
                    p,
                    p + CALL_OPEN.len(),
                ));
            }
            if check(CALL_CLOSE) {
                return Some(self.consume(p, CALL_CLOSE.len()));
            }
            if CUT.iter().any(|t| check(t)) {
                self.s.mode = Mode::Cut;
                return Some(self.consume(p, input.len() - p));
            }
            for (open, close) in ALT {
                // Only a wrapper whose body starts like a call is held as a candidate, so prose
                // about `<tool>` elements streams on.
                if check(open) {
                    match self.call_tag_ahead(input, p + open.len()) {
                        Some(true) => return Some(self.open_wrap(input, p, p + open.len(), close)),
                        None => undecided = true,
                        Some(false) => {}
                    }
                    match self.starts_like_call(input, p + open.len()) {
                        Some(true) => {
                            let end = p + open.len();
                            return Some(self.open_block(BlockKind::Alt, close, input, p, end));
                        }
                        None => undecided = true,
                        Some(false) => {}
                    }
                }
            }
            let (function_open, attr_open) = (check(FUNCTION_OPEN), check(ATTR_OPEN));
            if function_open {
                match self.function_name(input, p + FUNCTION_OPEN.len(), eof) {
                    NameCheck::Declared => {
                        let end = p + FUNCTION_OPEN.len();
                        return Some(self.open_block(BlockKind::BareFunction, "", input, p, end));
                    }
                    NameCheck::Hold => partial = true,
                    NameCheck::No => {}
                }
            }
            if attr_open {
                match self.attribute_name(input, p + ATTR_OPEN.len(), eof) {
                    NameCheck::Declared => {
                        let end = p + ATTR_OPEN.len();
                        return Some(self.open_block(BlockKind::BareFunction, "", input, p, end));
                    }
                    NameCheck::Hold => partial = true,
                    NameCheck::No => {}
                }
            }
        }
        if (partial || undecided) && !eof {
            return None;
        }
        self.emit_text("<");
        Some(p + 1)
    }

    /// At a backtick: a fence whose body starts like a call opens a candidate block.
    fn content_fence(&mut self, input: &str, p: usize, eof: bool) -> Option<usize> {
        let b = input.as_bytes();
        match match_tag(&b[p..], FENCE) {
            Match::Full => {}
            Match::Partial if !eof => return None,
            // One or two backticks open an inline code span.
            _ => return self.backtick_run(input, p, eof),
        }
        let lang_start = p + FENCE.len();
        let mut j = lang_start;
        while j < b.len()
            && (b[j].is_ascii_alphanumeric() || b[j] == b'_')
            && j - lang_start <= MAX_LANG
        {
            j += 1;
        }
        if j < b.len() && b[j] == b'\n' && j - lang_start <= MAX_LANG {
            match self.call_tag_ahead(input, j + 1) {
                Some(true) => return Some(self.open_wrap(input, p, j + 1, FENCE)),
                None if !eof => return None,
                _ => {}
            }
        }
        let verdict = if j - lang_start > MAX_LANG {
            Some(false)
        } else if j == b.len() {
            None
        } else if b[j] != b'\n' {
            Some(false)
        } else {
            self.starts_like_call(input, j + 1)
        };
        match verdict {
            None if !eof => None,
            Some(true) => Some(self.open_block(BlockKind::Fence, FENCE, input, p, j + 1)),
            _ => {
                self.emit_text(FENCE);
                Some(p + FENCE.len())
            }
        }
    }

    /// Whether a `<tool_call>` follows at `k` (after optional whitespace); None while undecided.
    fn call_tag_ahead(&self, input: &str, k: usize) -> Option<bool> {
        let b = input.as_bytes();
        let start = k;
        let k = start
            + b[start..]
                .iter()
                .take(MAX_GAP + 1)
                .take_while(|c| c.is_ascii_whitespace())
                .count();
        if k - start > MAX_GAP {
            return Some(false);
        }
        match match_tag(b.get(k..)?, CALL_OPEN) {
            Match::Full => Some(true),
            Match::Partial => None,
            Match::No => Some(false),
        }
    }

    /// Swallows a fence or wrapper opener (`input[p..end]`) written around a call; its
    /// `close` is swallowed after the call.
    fn open_wrap(&mut self, input: &str, p: usize, end: usize, close: &'static str) -> usize {
        let gap = input.as_bytes()[end..]
            .iter()
            .take_while(|c| c.is_ascii_whitespace())
            .count();
        let end = end + gap;
        self.s.wrap = Some(Wrap {
            close,
            after_call: false,
        });
        self.consume(p, end - p)
    }

    /// After a call inside a wrapper: its closer (and the whitespace before it) is markup; so
    /// is the whitespace before another call in the same wrapper.
    fn wrap_close(&mut self, input: &str, i: usize, eof: bool, close: &str) -> WrapClose {
        let b = input.as_bytes();
        let k = i + b[i..]
            .iter()
            .take(MAX_GAP + 1)
            .take_while(|c| c.is_ascii_whitespace())
            .count();
        if k - i > MAX_GAP {
            return WrapClose::No;
        }
        if k == b.len() {
            return if eof { WrapClose::No } else { WrapClose::Hold };
        }
        match (match_tag(&b[k..], close), match_tag(&b[k..], CALL_OPEN)) {
            (Match::Full, _) => {
                self.s.wrap = None;
                WrapClose::Markup(self.consume(i, k + close.len() - i))
            }
            (_, Match::Full) if k > i => WrapClose::Markup(self.consume(i, k - i)),
            (_, Match::Full) => WrapClose::Call,
            (Match::Partial, _) | (_, Match::Partial) if !eof => WrapClose::Hold,
            _ => WrapClose::No,
        }
    }

    /// Inside an inline code span: text up to the closing backticks or the end of the line.
    fn code_span_step(&mut self, input: &str, i: usize, eof: bool) -> Option<usize> {
        let Some(off) = memchr2(b'`', b'\n', &input.as_bytes()[i..]) else {
            self.emit_text(&input[i..]);
            return Some(input.len());
        };
        let p = i + off;
        if p > i {
            self.emit_text(&input[i..p]);
            return Some(p);
        }
        if input.as_bytes()[p] == b'\n' {
            self.s.in_code = false;
            self.emit_text("\n");
            return Some(p + 1);
        }
        self.backtick_run(input, p, eof)
    }

    /// A run of backticks that opens or closes an inline code span, emitted whole (so `` ``
    /// `` is one delimiter however the stream was cut); held back while it may go on.
    fn backtick_run(&mut self, input: &str, p: usize, eof: bool) -> Option<usize> {
        let b = input.as_bytes();
        let run = b[p..].iter().take_while(|&&c| c == b'`').count();
        if p + run == b.len() && !eof {
            return None;
        }
        self.s.in_code = !self.s.in_code;
        self.emit_text(&input[p..p + run]);
        Some(p + run)
    }

    /// Whether the text at `k` (after optional whitespace) starts a JSON value or `<function=`;
    /// None while undecided.
    fn starts_like_call(&self, input: &str, mut k: usize) -> Option<bool> {
        let b = input.as_bytes();
        let start = k;
        while k < b.len() && b[k].is_ascii_whitespace() && k - start <= MAX_GAP {
            k += 1;
        }
        if k - start > MAX_GAP {
            return Some(false);
        }
        match b.get(k)? {
            b'{' | b'[' => Some(true),
            b'<' => match match_tag(&b[k..], FUNCTION_OPEN) {
                Match::Full => Some(true),
                Match::Partial => None,
                Match::No => Some(false),
            },
            _ => Some(false),
        }
    }

    /// At `{` or `[` with nothing visible before it: JSON that may be a bare call.
    fn content_bare(&mut self, input: &str, p: usize, eof: bool) -> Option<usize> {
        let b = input.as_bytes();
        let mut k = p + 1;
        while k < b.len() && b[k].is_ascii_whitespace() && k - p <= MAX_GAP {
            k += 1;
        }
        let verdict = match b.get(k) {
            _ if self.s.visible || k - p > MAX_GAP => Some(false),
            None => None,
            Some(c) if b[p] == b'{' => Some(matches!(c, b'"' | b'\'')),
            Some(c) => Some(*c == b'{'),
        };
        match verdict {
            None if !eof => None,
            Some(true) => Some(self.open_block(BlockKind::BareJson, "", input, p, p)),
            _ => {
                self.emit_text(&input[p..p + 1]);
                Some(p + 1)
            }
        }
    }
}

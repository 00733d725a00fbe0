//! The part of [`StreamParser`] that reads inside a call block: finding its end (JSON-aware, so
//! a `</tool_call>` inside a string does not end it) and turning it into events.

use memchr::memchr2;

use super::super::block::{BlockKind, Ending, Finished, interpret};
use super::super::event::{ParseEvent, StreamEnd};
use super::super::tags::{CALL_OPEN, CUT, FUNCTION_OPEN, Match, THINK_CLOSE, match_tag};
use super::{Block, Mode, StreamParser, Term};

impl StreamParser {
    /// Scans block bytes from `i`; None when a possible terminator is cut by the chunk end.
    pub(super) fn block_step(&mut self, input: &str, i: usize, eof: bool) -> Option<usize> {
        let mut blk = self.s.block.take()?;
        let b = input.as_bytes();
        let mut j = i;
        while j < b.len() {
            if blk.esc || blk.in_str {
                j = skip_string(&mut blk, b, j);
                continue;
            }
            let c = b[j];
            if blk.json.is_none() && !c.is_ascii_whitespace() {
                blk.json = Some(matches!(c, b'{' | b'['));
            }
            if blk.json == Some(true) {
                match c {
                    b'"' => blk.in_str = true,
                    b'{' | b'[' => blk.depth += 1,
                    b'}' | b']' => {
                        blk.depth -= 1;
                        if blk.kind == BlockKind::BareJson && blk.depth <= 0 {
                            self.absorb(&mut blk, &input[i..=j]);
                            let end = blk.raw.len();
                            self.finish_block(blk, Ending::Closed, end);
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
            }
            if c == b'<' || c == b'`' {
                match terminator(&blk, &b[j..]) {
                    Term::None => {}
                    Term::Hold if eof => {}
                    Term::Hold => {
                        // Keep what was scanned; the possible tag is held back from `j`.
                        self.absorb(&mut blk, &input[i..j]);
                        self.s.block = Some(blk);
                        return (j > i).then_some(j);
                    }
                    Term::Close(len) => {
                        self.absorb(&mut blk, &input[i..j]);
                        let body_end = blk.raw.len();
                        self.absorb(&mut blk, &input[j..j + len]);
                        let body_end = if blk.kind == BlockKind::BareFunction {
                            blk.raw.len()
                        } else {
                            body_end
                        };
                        self.finish_block(blk, Ending::Closed, body_end);
                        return Some(j + len);
                    }
                    Term::Supersede => {
                        self.absorb(&mut blk, &input[i..j]);
                        let end = blk.raw.len();
                        self.finish_block(blk, Ending::Superseded, end);
                        return Some(j);
                    }
                    Term::Abandon => {
                        self.absorb(&mut blk, &input[i..j]);
                        self.emit_reasoning(&blk.raw);
                        return Some(j);
                    }
                }
            }
            j += 1;
        }
        let end = j.min(b.len());
        self.absorb(&mut blk, &input[i..end]);
        self.s.block = Some(blk);
        Some(end)
    }

    /// Appends to the block. (A think block's bytes become reasoning when it ends, unless
    /// its calls end the reasoning.)
    fn absorb(&mut self, blk: &mut Block, s: &str) {
        blk.raw.push_str(s);
    }

    /// A finished think block: its calls wait for the think block's fate (garbage is only
    /// reasoning, never reported).
    fn settle_think_block(&mut self, raw: &str, events: Vec<ParseEvent>) {
        let calls: Vec<ParseEvent> = events
            .into_iter()
            .filter(|e| matches!(e, ParseEvent::ToolCall(_)))
            .collect();
        if calls.is_empty() {
            self.emit_reasoning(raw);
        } else {
            self.hold_think_call(raw);
            self.s.think_calls.extend(calls);
        }
    }

    pub(super) fn finish_block(&mut self, blk: Block, ending: Ending, body_end: usize) {
        let fin = Finished {
            kind: blk.kind,
            raw: &blk.raw,
            body: &blk.raw[blk.body_start.min(body_end)..body_end],
            ending,
        };
        let events = interpret(&fin, &self.tools, self.text_calls);
        if blk.in_think {
            self.settle_think_block(&blk.raw, events);
            return;
        }
        if let Some(wrap) = &mut self.s.wrap {
            wrap.after_call = true;
        }
        let mut shown = 0;
        for e in events {
            match e {
                ParseEvent::Text(t) => {
                    shown += t.len();
                    self.emit_text(&t);
                }
                other => self.push_event(other),
            }
        }
        self.s.consumed += blk.raw.len().saturating_sub(shown);
    }

    /// A block still open when the stream ended.
    pub(super) fn finish_open_block(&mut self, blk: Block, end: StreamEnd) {
        if blk.in_think {
            let events = if end == StreamEnd::Stop && self.s.mode == Mode::Think {
                let len = blk.raw.len();
                let fin = Finished {
                    kind: blk.kind,
                    raw: &blk.raw,
                    body: &blk.raw[blk.body_start..len],
                    ending: Ending::Open(end),
                };
                interpret(&fin, &self.tools, self.text_calls)
            } else {
                Vec::new()
            };
            self.settle_think_block(&blk.raw, events);
            return;
        }
        // The JSON-aware scan waits for a close tag outside strings; if an unbalanced quote hid
        // the real one, fall back to the first literal close tag and read on after it.
        let literal = (blk.json == Some(true) && !blk.close.is_empty())
            .then(|| blk.raw[blk.body_start..].find(blk.close))
            .flatten();
        match literal {
            Some(pos) => {
                let body_end = blk.body_start + pos;
                let cut = body_end + blk.close.len();
                let mut blk = blk;
                let rest = blk.raw.split_off(cut);
                self.finish_block(blk, Ending::Closed, body_end);
                self.run(&rest, true);
            }
            None => {
                let len = blk.raw.len();
                self.finish_block(blk, Ending::Open(end), len);
            }
        }
    }
}

/// Advances through a JSON string (or the byte after a backslash); only a quote or an escape
/// matters there.
fn skip_string(blk: &mut Block, b: &[u8], j: usize) -> usize {
    if blk.esc {
        blk.esc = false;
        return j + 1;
    }
    match memchr2(b'"', b'\\', &b[j..]) {
        None => b.len(),
        Some(off) => {
            if b[j + off] == b'\\' {
                blk.esc = true;
            } else {
                blk.in_str = false;
            }
            j + off + 1
        }
    }
}

/// What the markup at the start of `rest` means to the block.
fn terminator(blk: &Block, rest: &[u8]) -> Term {
    let mut partial = false;
    let mut check = |tag: &str| {
        let m = match_tag(rest, tag);
        partial |= m == Match::Partial;
        m == Match::Full
    };
    if !blk.close.is_empty() && check(blk.close) {
        return Term::Close(blk.close.len());
    }
    if rest.first() == Some(&b'<') {
        if blk.in_think && check(THINK_CLOSE) {
            return Term::Abandon;
        }
        let explicit = matches!(blk.kind, BlockKind::ToolCall | BlockKind::BareFunction);
        if explicit && check(CALL_OPEN) {
            return Term::Supersede;
        }
        if blk.kind == BlockKind::BareFunction && check(FUNCTION_OPEN) {
            return Term::Supersede;
        }
        if CUT.iter().any(|t| check(t)) {
            return Term::Supersede;
        }
    }
    if partial { Term::Hold } else { Term::None }
}

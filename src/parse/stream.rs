//! The streaming parser: a think router (content / think / cut) feeding a call scanner. Text is
//! searched with `memchr` for the few bytes that can start markup; a suffix that could still
//! become a tag is held back, so no `<tool` fragment ever reaches the visible text and any split
//! of the same input gives the same events.

use hearth_backend::ToolSpec;
use memchr::memchr;

use super::block::BlockKind;
use super::config::{ParserConfig, TextCalls, ThinkStart};
use super::event::{ParseEvent, StreamEnd};
use super::function_tags;
use super::normalize::find_tool;
use super::prose_calls::{MAX_SCANNED_BYTES, calls_in_prose};
use super::tags::{
    CALL_CLOSE, CALL_OPEN, FUNCTION_OPEN, MAX_NAME, Match, THINK_CLOSE, THINK_OPEN, closer,
    match_tag,
};

/// Incremental parser for one assistant message; see the module docs.
#[derive(Debug)]
pub struct StreamParser {
    tools: Vec<ToolSpec>,
    /// Whether in-band calls are read at all (always, since native servers leak them too).
    calls: bool,
    think: ThinkStart,
    pub(super) text_calls: TextCalls,
    s: State,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Content,
    Think,
    /// After a hallucinated next turn (`<tool_response>`, `<|im_start|>`): everything dropped.
    Cut,
}

#[derive(Debug)]
struct State {
    /// Input not yet decided (a possible partial tag).
    buf: String,
    mode: Mode,
    block: Option<Block>,
    /// Non-whitespace text was shown: bare JSON no longer counts as a call.
    visible: bool,
    /// Inside an inline code span (`` `…` ``) of the visible text: tags there are words.
    /// Spans end at their closing backticks or, if those never come, at the line's end.
    in_code: bool,
    /// A fence or wrapper tag around a `<tool_call>`, swallowed: its closer after the call is
    /// markup too.
    wrap: Option<Wrap>,
    /// Calls written inside the open think block: run only if the block never closes.
    think_calls: Vec<ParseEvent>,
    /// Their markup, not shown yet: a call that ends the reasoning (the stream stops without
    /// `</think>`) is no thought, but one the model thinks on after (or closes the block
    /// after) was, and is shown as reasoning then.
    think_held: String,
    /// Trailing whitespace of the reasoning so far, held back: none is shown before
    /// `</think>`.
    reasoning_ws: String,
    /// Just after `</think>`: the visible text's leading whitespace is dropped.
    trim_text: bool,
    /// At the start of reasoning: its leading whitespace is dropped.
    trim_reasoning: bool,
    finished: bool,
    /// Input bytes that became neither text nor reasoning (markup, call bodies, cut tails).
    consumed: usize,
    out: Vec<ParseEvent>,
    text: String,
    reasoning: String,
    /// Every visible text byte of the message, kept for [`calls_in_prose`] when calls written
    /// as text are taken.
    shown: String,
    /// A call (good or malformed) was read from the message.
    made_calls: bool,
}

impl State {
    fn new(think: ThinkStart) -> Self {
        Self {
            buf: String::new(),
            mode: match think {
                ThinkStart::Closed => Mode::Content,
                ThinkStart::Open => Mode::Think,
            },
            block: None,
            visible: false,
            in_code: false,
            wrap: None,
            think_calls: Vec::new(),
            think_held: String::new(),
            reasoning_ws: String::new(),
            trim_text: false,
            trim_reasoning: true,
            finished: false,
            consumed: 0,
            out: Vec::new(),
            text: String::new(),
            reasoning: String::new(),
            shown: String::new(),
            made_calls: false,
        }
    }
}

/// A fence (```` ```json ````) or wrapper (`<response>`) written around a `<tool_call>`.
#[derive(Debug, Clone, Copy)]
struct Wrap {
    close: &'static str,
    /// The call inside has ended: the closer may come next.
    after_call: bool,
}

/// A call block being read.
#[derive(Debug)]
struct Block {
    kind: BlockKind,
    close: &'static str,
    /// Opened inside `<think>`: its bytes are reasoning too.
    in_think: bool,
    raw: String,
    body_start: usize,
    /// Whether the body is JSON (tags inside its strings are ignored); None until its first
    /// non-whitespace byte.
    json: Option<bool>,
    in_str: bool,
    esc: bool,
    depth: i32,
}

/// What a block's scanner found at a `<` or backtick.
enum Term {
    None,
    Hold,
    Close(usize),
    /// The next opener or a cut marker: the block ends here and the marker is scanned again.
    Supersede,
    /// `</think>` ended the think block the call was written in.
    Abandon,
}

enum NameCheck {
    Hold,
    Declared,
    No,
}

impl StreamParser {
    /// A parser for one message.
    pub fn new(config: ParserConfig) -> Self {
        Self {
            calls: true,
            think: config.think,
            text_calls: config.text_calls,
            tools: config.tools,
            s: State::new(config.think),
        }
    }

    /// Feeds in-band model text.
    pub fn feed(&mut self, text: &str) -> Vec<ParseEvent> {
        if self.s.finished {
            return Vec::new();
        }
        if self.s.buf.is_empty() {
            let done = self.run(text, false);
            self.s.buf.push_str(&text[done..]);
        } else {
            let mut input = std::mem::take(&mut self.s.buf);
            input.push_str(text);
            let done = self.run(&input, false);
            self.s.buf = input.split_off(done);
        }
        self.take_events()
    }

    /// Feeds out-of-band reasoning (`reasoning_content` / `reasoning` deltas).
    pub fn feed_reasoning(&mut self, text: &str) -> Vec<ParseEvent> {
        if self.s.finished {
            return Vec::new();
        }
        self.emit_reasoning(text);
        self.take_events()
    }

    /// Ends the message: flushes what was held back and decides open blocks. Idempotent; feeds
    /// after it are inert.
    pub fn finish(&mut self, end: StreamEnd) -> Vec<ParseEvent> {
        if self.s.finished {
            return Vec::new();
        }
        let input = std::mem::take(&mut self.s.buf);
        self.run(&input, true);
        while let Some(blk) = self.s.block.take() {
            self.finish_open_block(blk, end);
        }
        self.s.finished = true;
        if end == StreamEnd::Stop
            && !self.s.made_calls
            && self.s.think_calls.is_empty()
            && self.text_calls == TextCalls::Take
        {
            let shown = std::mem::take(&mut self.s.shown);
            for event in calls_in_prose(&shown, &self.tools) {
                self.push_event(event);
            }
        }
        if self.s.mode == Mode::Think {
            match end {
                StreamEnd::Stop => {
                    // The calls ended the reasoning (vLLM's rule): they run, and are no
                    // thought.
                    let calls = std::mem::take(&mut self.s.think_calls);
                    self.s.consumed += std::mem::take(&mut self.s.think_held).len();
                    self.flush();
                    self.s.out.extend(calls);
                }
                StreamEnd::Length => {
                    self.s.think_calls.clear();
                    self.release_held();
                    self.flush();
                    self.s.out.push(ParseEvent::ReasoningCut);
                }
            }
        }
        self.s.consumed += std::mem::take(&mut self.s.reasoning_ws).len();
        self.take_events()
    }

    /// Makes the parser ready for a new message with the same configuration.
    pub fn reset(&mut self) {
        self.s = State::new(self.think);
    }

    /// Input bytes that were consumed as markup or call bodies (for accounting in tests).
    pub fn consumed_bytes(&self) -> usize {
        self.s.consumed
    }

    fn take_events(&mut self) -> Vec<ParseEvent> {
        self.flush();
        std::mem::take(&mut self.s.out)
    }

    fn flush(&mut self) {
        if !self.s.reasoning.is_empty() {
            let r = std::mem::take(&mut self.s.reasoning);
            self.s.out.push(ParseEvent::Reasoning(r));
        }
        if !self.s.text.is_empty() {
            let t = std::mem::take(&mut self.s.text);
            self.s.out.push(ParseEvent::Text(t));
        }
    }

    fn emit_text(&mut self, t: &str) {
        let t = if self.s.trim_text {
            let kept = t.trim_start();
            self.s.consumed += t.len() - kept.len();
            self.s.trim_text = kept.is_empty();
            kept
        } else {
            t
        };
        if t.is_empty() {
            return;
        }
        if !self.s.reasoning.is_empty() {
            self.flush();
        }
        if !self.s.visible && t.bytes().any(|c| !c.is_ascii_whitespace()) {
            self.s.visible = true;
        }
        if self.text_calls == TextCalls::Take && self.s.shown.len() < MAX_SCANNED_BYTES {
            self.s.shown.push_str(t);
        }
        self.s.text.push_str(t);
    }

    /// Reasoning text; trailing whitespace waits for more (see [`State::reasoning_ws`]), and
    /// more reasoning after held calls shows them as thought.
    fn emit_reasoning(&mut self, t: &str) {
        let t = if self.s.trim_reasoning {
            let kept = t.trim_start();
            self.s.consumed += t.len() - kept.len();
            self.s.trim_reasoning = kept.is_empty();
            kept
        } else {
            t
        };
        let body = t.trim_end().len();
        if body == 0 {
            self.s.reasoning_ws.push_str(t);
            return;
        }
        if !self.s.text.is_empty() {
            self.flush();
        }
        self.release_held();
        // Moved without giving up either buffer's capacity: this runs once per piece.
        let s = &mut self.s;
        s.reasoning.push_str(&s.reasoning_ws);
        s.reasoning_ws.clear();
        s.reasoning.push_str(&t[..body]);
        self.s.reasoning_ws.push_str(&t[body..]);
    }

    /// Shows the held markup of calls in the think block as reasoning.
    fn release_held(&mut self) {
        if !self.s.think_held.is_empty() {
            let held = std::mem::take(&mut self.s.think_held);
            self.s.reasoning.push_str(&held);
        }
    }

    /// Holds a think block's call markup (with the whitespace before it) until it is known
    /// whether the calls ended the reasoning.
    fn hold_think_call(&mut self, raw: &str) {
        let ws = std::mem::take(&mut self.s.reasoning_ws);
        self.s.think_held.push_str(&ws);
        self.s.think_held.push_str(raw);
    }

    /// `</think>`: held calls were thought about; trailing whitespace on either side of the
    /// boundary is dropped.
    fn close_think(&mut self) {
        self.s.think_calls.clear();
        self.release_held();
        self.s.consumed += std::mem::take(&mut self.s.reasoning_ws).len();
        self.s.mode = Mode::Content;
        self.s.trim_text = true;
    }

    fn push_event(&mut self, e: ParseEvent) {
        if matches!(e, ParseEvent::ToolCall(_) | ParseEvent::Malformed(_)) {
            self.s.made_calls = true;
        }
        self.flush();
        self.s.out.push(e);
    }

    /// Processes `input` as far as it can be decided; returns how many bytes were used.
    fn run(&mut self, input: &str, eof: bool) -> usize {
        let mut i = 0;
        while i < input.len() {
            let next = if self.s.block.is_some() {
                self.block_step(input, i, eof)
            } else {
                match self.s.mode {
                    Mode::Content => self.content_step(input, i, eof),
                    Mode::Think => self.think_step(input, i, eof),
                    Mode::Cut => {
                        self.s.consumed += input.len() - i;
                        Some(input.len())
                    }
                }
            };
            match next {
                Some(n) => i = n,
                None => break,
            }
        }
        i
    }

    fn think_step(&mut self, input: &str, i: usize, eof: bool) -> Option<usize> {
        let Some(off) = memchr(b'<', &input.as_bytes()[i..]) else {
            self.emit_reasoning(&input[i..]);
            return Some(input.len());
        };
        let p = i + off;
        if p > i {
            self.emit_reasoning(&input[i..p]);
            return Some(p);
        }
        let rest = &input.as_bytes()[p..];
        let mut partial = false;
        let mut check = |tag: &str| {
            let m = match_tag(rest, tag);
            partial |= m == Match::Partial;
            m == Match::Full
        };
        if check(THINK_CLOSE) {
            // Calls written in a think block that closes were only thought about.
            self.close_think();
            return Some(self.consume(p, THINK_CLOSE.len()));
        }
        if check(THINK_OPEN) {
            // A stray `<think>` after a pre-filled one.
            return Some(self.consume(p, THINK_OPEN.len()));
        }
        if self.calls {
            if check(CALL_OPEN) {
                let end = p + CALL_OPEN.len();
                return Some(self.open_think_block(BlockKind::ToolCall, CALL_CLOSE, input, p, end));
            }
            if check(FUNCTION_OPEN) {
                match self.function_name(input, p + FUNCTION_OPEN.len(), eof) {
                    NameCheck::Declared => {
                        let end = p + FUNCTION_OPEN.len();
                        return Some(self.open_think_block(
                            BlockKind::BareFunction,
                            "",
                            input,
                            p,
                            end,
                        ));
                    }
                    NameCheck::Hold => partial = true,
                    NameCheck::No => {}
                }
            }
        }
        if partial && !eof {
            return None;
        }
        self.emit_reasoning("<");
        Some(p + 1)
    }

    /// Checks `NAME>` after `<function=`.
    fn function_name(&self, input: &str, start: usize, eof: bool) -> NameCheck {
        let tail = &input[start..];
        let window = &tail.as_bytes()[..tail.len().min(MAX_NAME)];
        match memchr(b'>', window) {
            Some(gt) => {
                let name = tail[..gt].trim();
                if !name.contains('\n') && find_tool(&self.tools, name).is_some() {
                    NameCheck::Declared
                } else {
                    NameCheck::No
                }
            }
            None if eof || window.contains(&b'\n') || window.len() >= MAX_NAME => NameCheck::No,
            None => NameCheck::Hold,
        }
    }

    /// Checks `"NAME">` after `<function name=`.
    fn attribute_name(&self, input: &str, start: usize, eof: bool) -> NameCheck {
        let tail = &input[start..];
        let window = &tail.as_bytes()[..tail.len().min(MAX_NAME)];
        match memchr(b'>', window) {
            Some(_) => match function_tags::attribute_name(tail) {
                Some((name, _)) if find_tool(&self.tools, name).is_some() => NameCheck::Declared,
                _ => NameCheck::No,
            },
            None if eof || window.contains(&b'\n') || window.len() >= MAX_NAME => NameCheck::No,
            None => NameCheck::Hold,
        }
    }

    fn consume(&mut self, p: usize, len: usize) -> usize {
        self.s.consumed += len;
        p + len
    }

    fn new_block(kind: BlockKind, close: &'static str, raw: &str, in_think: bool) -> Block {
        Block {
            kind,
            close: if close.is_empty() {
                closer(kind, close)
            } else {
                close
            },
            in_think,
            raw: raw.to_string(),
            // A bare `<function=` body keeps its opener: the XML reader needs the name.
            body_start: if kind == BlockKind::BareFunction {
                0
            } else {
                raw.len()
            },
            json: (kind == BlockKind::BareJson).then_some(true),
            in_str: false,
            esc: false,
            depth: 0,
        }
    }

    fn open_block(
        &mut self,
        kind: BlockKind,
        close: &'static str,
        input: &str,
        p: usize,
        end: usize,
    ) -> usize {
        self.flush();
        self.s.block = Some(Self::new_block(kind, close, &input[p..end], false));
        end
    }

    fn open_think_block(
        &mut self,
        kind: BlockKind,
        close: &'static str,
        input: &str,
        p: usize,
        end: usize,
    ) -> usize {
        self.s.block = Some(Self::new_block(kind, close, &input[p..end], true));
        end
    }
}

#[path = "stream_block.rs"]
mod stream_block;

#[path = "stream_content.rs"]
mod stream_content;

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "stream_second_pass_tests.rs"]
mod second_pass_tests;

#[cfg(test)]
#[path = "stream_prop_tests.rs"]
mod prop_tests;

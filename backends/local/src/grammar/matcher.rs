//! A byte-level recogniser for JSON held to [`Shapes`]: fed a token's bytes, it says whether
//! some valid document still starts with everything fed so far.
//!
//! It is a pushdown automaton run as a set of states, so alternatives (`anyOf`, type lists) are
//! followed side by side until the bytes rule all but one out. Every state it
//! keeps can still be completed: a key must be a prefix of a key the object may still take, a
//! comma needs a key left to write, a closing brace needs every required key. The sampler
//! therefore never walks into a call it cannot finish.

use super::shape::{ANY, Shape, ShapeId, Shapes};

/// Blank bytes in a row between tokens of the JSON. Enough for pretty-printed arguments a few
/// levels deep; a model stuck emitting blanks is cut off here instead of at `max_tokens`.
const MAX_BLANKS: u8 = 20;
/// Alternatives followed at once; more are dropped (only pathological schemas get near it).
const MAX_STATES: usize = 64;

/// Where the recogniser stands.
#[derive(Debug, Clone)]
pub(crate) struct Matcher {
    states: Vec<State>,
}

#[derive(Debug, Clone)]
struct State {
    stack: Vec<Frame>,
    blanks: u8,
}

#[derive(Debug, Clone)]
enum Frame {
    /// A value of this shape is due.
    Value(ShapeId),
    Str(Text),
    Num {
        int: bool,
        at: NumAt,
    },
    /// `true`, `false` or `null`, `at` bytes in.
    Word {
        text: &'static [u8],
        at: u8,
    },
    Obj(Obj),
    Arr {
        item: ShapeId,
        at: ArrAt,
    },
    /// Fixed text after the value (the closing tag), blanks allowed before it.
    Tag {
        text: &'static [u8],
        at: u8,
    },
}

#[derive(Debug, Clone)]
struct Text {
    kind: TextKind,
    /// What a key or enum string holds so far (empty for free strings).
    typed: Vec<u8>,
    escape: Escape,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum TextKind {
    Free,
    /// A key of the object frame below; its shape decides which keys are left (any, for a
    /// free-form object).
    Key,
    /// One of the strings of this [`Shape::Enum`].
    Enum(ShapeId),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Escape {
    None,
    Backslash,
    /// Hex digits of a `\u` escape read so far.
    Hex(u8),
}

#[derive(Debug, Clone)]
struct Obj {
    /// `None`: a free-form object.
    shape: Option<ShapeId>,
    /// Bit `i`: property `i` was written.
    seen: u64,
    /// Index of the property whose value is being written.
    key: usize,
    /// In the call envelope: the tool the name picked.
    pick: usize,
    at: ObjAt,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum ObjAt {
    /// After `{`: a key or `}`.
    Open,
    /// After `,`: a key.
    KeyDue,
    /// After a key: `:`.
    Colon,
    /// The value is being written (the frame above).
    Value,
    /// After a value: `,` or `}`.
    Next,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum ArrAt {
    /// After `[`: a value or `]`.
    Open,
    /// After `,`: a value.
    ValueDue,
    /// An item is being written (the frame above).
    Value,
    /// After an item: `,` or `]`.
    Next,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum NumAt {
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    E,
    ExpSign,
    Exp,
}

fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

impl Matcher {
    /// Expects a value of the root shape, then blanks and `close`.
    pub fn new(shapes: &Shapes, close: &'static [u8]) -> Self {
        let mut stack = Vec::with_capacity(8);
        if !close.is_empty() {
            stack.push(Frame::Tag { text: close, at: 0 });
        }
        stack.push(Frame::Value(shapes.root()));
        Self {
            states: vec![State { stack, blanks: 0 }],
        }
    }

    /// The matcher after `bytes`, or `None` when no valid document continues with them.
    pub fn feed(&self, shapes: &Shapes, bytes: &[u8]) -> Option<Matcher> {
        let mut states = self.states.clone();
        for &b in bytes {
            let mut next = Vec::with_capacity(states.len());
            for st in states {
                step(st, b, shapes, &mut next);
            }
            if next.is_empty() {
                return None;
            }
            next.truncate(MAX_STATES);
            states = next;
        }
        Some(Matcher { states })
    }

    /// True when the document (and its closing text) is complete.
    pub fn is_done(&self) -> bool {
        self.states.iter().any(|s| s.stack.is_empty())
    }
}

/// Advances `st` by one byte, pushing what survives (none, one, or one per alternative).
fn step(mut st: State, b: u8, shapes: &Shapes, out: &mut Vec<State>) {
    let blank = is_blank(b);
    let Some(top) = st.stack.last_mut() else {
        return;
    };
    match top {
        Frame::Value(id) => {
            let id = *id;
            if blank {
                return blanks(st, out);
            }
            if let Shape::OneOf(alternatives) = shapes.get(id) {
                for &alt in alternatives {
                    let mut fork = st.clone();
                    fork.stack.pop();
                    fork.stack.push(Frame::Value(alt));
                    step(fork, b, shapes, out);
                }
                return;
            }
            let Some(frame) = start_value(shapes.get(id), id, b) else {
                return;
            };
            *top = frame;
            st.blanks = 0;
            out.push(st);
        }
        Frame::Str(text) => {
            let kind = text.kind;
            if let Some(closed) = string_byte(text, b) {
                if !closed {
                    if kind != TextKind::Free && !choice_open(&st, shapes) {
                        return;
                    }
                    return out.push(st);
                }
                if close_string(&mut st, shapes) {
                    out.push(st);
                }
            }
        }
        Frame::Num { int, at } => match number_byte(*int, *at, b) {
            Some(next) => {
                *at = next;
                out.push(st);
            }
            None => {
                if matches!(at, NumAt::Zero | NumAt::Int | NumAt::Frac | NumAt::Exp) {
                    close_value(&mut st);
                    step(st, b, shapes, out);
                }
            }
        },
        Frame::Word { text, at } => {
            if text.get(usize::from(*at)) == Some(&b) {
                *at += 1;
                if usize::from(*at) == text.len() {
                    close_value(&mut st);
                }
                out.push(st);
            }
        }
        Frame::Obj(_) => object_byte(st, b, shapes, out),
        Frame::Arr { item, at } => {
            let item = *item;
            match (*at, b) {
                _ if blank && *at != ArrAt::Value => blanks(st, out),
                (ArrAt::Open, b']') | (ArrAt::Next, b']') => {
                    close_value(&mut st);
                    st.blanks = 0;
                    out.push(st);
                }
                (ArrAt::Next, b',') => {
                    *at = ArrAt::ValueDue;
                    st.blanks = 0;
                    out.push(st);
                }
                (ArrAt::Open, _) | (ArrAt::ValueDue, _) => {
                    *at = ArrAt::Value;
                    st.stack.push(Frame::Value(item));
                    step(st, b, shapes, out);
                }
                _ => {}
            }
        }
        Frame::Tag { text, at } => {
            if blank && *at == 0 {
                return blanks(st, out);
            }
            if text.get(usize::from(*at)) == Some(&b) {
                *at += 1;
                if usize::from(*at) == text.len() {
                    st.stack.pop();
                }
                out.push(st);
            }
        }
    }
}

fn blanks(mut st: State, out: &mut Vec<State>) {
    if st.blanks < MAX_BLANKS {
        st.blanks += 1;
        out.push(st);
    }
}

/// The frame a value of `shape` starts with when its first byte is `b`.
fn start_value(shape: &Shape, id: ShapeId, b: u8) -> Option<Frame> {
    let text = |kind| {
        Frame::Str(Text {
            kind,
            typed: Vec::new(),
            escape: Escape::None,
        })
    };
    let number = |int| {
        let at = match b {
            b'-' => NumAt::Minus,
            b'0' => NumAt::Zero,
            _ => NumAt::Int,
        };
        Frame::Num { int, at }
    };
    let word = |text: &'static [u8]| Frame::Word { text, at: 1 };
    Some(match (shape, b) {
        (Shape::String | Shape::Any, b'"') => text(TextKind::Free),
        (Shape::Enum(_), b'"') => text(TextKind::Enum(id)),
        (Shape::Integer, b'-' | b'0'..=b'9') => number(true),
        (Shape::Number | Shape::Any, b'-' | b'0'..=b'9') => number(false),
        (Shape::Boolean | Shape::Any, b't') => word(b"true"),
        (Shape::Boolean | Shape::Any, b'f') => word(b"false"),
        (Shape::Null | Shape::Any, b'n') => word(b"null"),
        (Shape::Object(_), b'{') => Frame::Obj(Obj {
            shape: Some(id),
            seen: 0,
            key: 0,
            pick: 0,
            at: ObjAt::Open,
        }),
        (Shape::FreeObject | Shape::Any, b'{') => Frame::Obj(Obj {
            shape: None,
            seen: 0,
            key: 0,
            pick: 0,
            at: ObjAt::Open,
        }),
        (Shape::Array(item), b'[') => Frame::Arr {
            item: *item,
            at: ArrAt::Open,
        },
        (Shape::Any, b'[') => Frame::Arr {
            item: ANY,
            at: ArrAt::Open,
        },
        _ => return None,
    })
}

/// One byte inside a string: `None` rejects it, `Some(true)` is the closing quote.
///
/// Raw line breaks and tabs are let through in free strings: hearth's parser escapes them, and
/// forcing a model that writes a file's lines raw to switch to `\n` mid-content costs more than
/// it buys. Other control bytes are refused, as JSON refuses them.
fn string_byte(text: &mut Text, b: u8) -> Option<bool> {
    let free = text.kind == TextKind::Free;
    match text.escape {
        Escape::Backslash => {
            text.escape = match b {
                b'u' => Escape::Hex(0),
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Escape::None,
                _ => return None,
            };
            Some(false)
        }
        Escape::Hex(n) => {
            if !b.is_ascii_hexdigit() {
                return None;
            }
            text.escape = if n == 3 {
                Escape::None
            } else {
                Escape::Hex(n + 1)
            };
            Some(false)
        }
        Escape::None => match b {
            b'"' => Some(true),
            // Keys and enum values are matched byte for byte; they never need escapes.
            b'\\' if free => {
                text.escape = Escape::Backslash;
                Some(false)
            }
            b'\n' | b'\r' | b'\t' if free => Some(false),
            b'\\' | 0..=0x1f => None,
            _ => {
                if !free {
                    text.typed.push(b);
                }
                Some(false)
            }
        },
    }
}

/// The strings a key or enum string at the top of `st` may still become.
fn choices<'a>(st: &'a State, shapes: &'a Shapes) -> Option<Vec<&'a str>> {
    let Some(Frame::Str(text)) = st.stack.last() else {
        return None;
    };
    match text.kind {
        TextKind::Free => None,
        TextKind::Enum(id) => match shapes.get(id) {
            Shape::Enum(options) => Some(options.iter().map(String::as_str).collect()),
            _ => None,
        },
        TextKind::Key => {
            let Some(Frame::Obj(obj)) = st.stack.get(st.stack.len().checked_sub(2)?) else {
                return None;
            };
            let Shape::Object(shape) = shapes.get(obj.shape?) else {
                return None;
            };
            let left = shape
                .props
                .iter()
                .enumerate()
                .filter(|(i, _)| obj.seen & (1 << i) == 0)
                .filter(|(i, _)| !shape.ordered || *i == obj.seen.count_ones() as usize);
            Some(left.map(|(_, (name, _))| name.as_str()).collect())
        }
    }
}

/// Whether what the key or enum string holds is still a prefix of one of its choices.
fn choice_open(st: &State, shapes: &Shapes) -> bool {
    let Some(Frame::Str(text)) = st.stack.last() else {
        return false;
    };
    match choices(st, shapes) {
        Some(options) => options
            .iter()
            .any(|o| o.as_bytes().starts_with(&text.typed)),
        // A free-form object's keys are free strings.
        None => true,
    }
}

/// Handles a string's closing quote; false when the string is not an allowed choice.
fn close_string(st: &mut State, shapes: &Shapes) -> bool {
    let Some(Frame::Str(text)) = st.stack.last() else {
        return false;
    };
    match text.kind {
        TextKind::Free => {
            close_value(st);
            true
        }
        TextKind::Enum(_) => {
            let Some(index) = choices(st, shapes)
                .and_then(|options| options.iter().position(|o| o.as_bytes() == text.typed))
            else {
                return false;
            };
            close_value(st);
            // The envelope's name picks the schema its arguments are held to.
            if let Some(Frame::Obj(obj)) = st.stack.last_mut() {
                obj.pick = index;
            }
            true
        }
        TextKind::Key => {
            let typed = text.typed.clone();
            let index = object_shape(st, shapes).and_then(|shape| {
                let left = choices(st, shapes)?;
                left.iter().find(|o| o.as_bytes() == typed)?;
                shape
                    .props
                    .iter()
                    .position(|(name, _)| name.as_bytes() == typed)
            });
            st.stack.pop();
            let Some(Frame::Obj(obj)) = st.stack.last_mut() else {
                return false;
            };
            match (obj.shape, index) {
                (None, _) => {}
                (Some(_), Some(i)) => {
                    obj.seen |= 1 << i;
                    obj.key = i;
                }
                (Some(_), None) => return false,
            }
            obj.at = ObjAt::Colon;
            true
        }
    }
}

/// The object shape of the frame below the key string at the top of `st`.
fn object_shape<'a>(st: &State, shapes: &'a Shapes) -> Option<&'a super::shape::ObjectShape> {
    let Some(Frame::Obj(obj)) = st.stack.get(st.stack.len().checked_sub(2)?) else {
        return None;
    };
    match shapes.get(obj.shape?) {
        Shape::Object(shape) => Some(shape),
        _ => None,
    }
}

fn object_byte(mut st: State, b: u8, shapes: &Shapes, out: &mut Vec<State>) {
    let Some(Frame::Obj(obj)) = st.stack.last_mut() else {
        return;
    };
    let shape = match obj.shape.map(|id| shapes.get(id)) {
        Some(Shape::Object(shape)) => Some(shape),
        _ => None,
    };
    let keys_left = shape.is_none_or(|s| {
        let all = if s.props.len() == 64 {
            u64::MAX
        } else {
            (1u64 << s.props.len()) - 1
        };
        obj.seen & all != all
    });
    let may_close = shape.is_none_or(|s| s.required & !obj.seen == 0);
    match (obj.at, b) {
        (ObjAt::Value, _) => {}
        (_, b) if is_blank(b) => blanks(st, out),
        (ObjAt::Open | ObjAt::KeyDue, b'"') => {
            if obj.at == ObjAt::Open && !keys_left {
                return;
            }
            st.stack.push(Frame::Str(Text {
                kind: TextKind::Key,
                typed: Vec::new(),
                escape: Escape::None,
            }));
            st.blanks = 0;
            out.push(st);
        }
        (ObjAt::Open | ObjAt::Next, b'}') if may_close => {
            close_value(&mut st);
            st.blanks = 0;
            out.push(st);
        }
        (ObjAt::Next, b',') if keys_left => {
            obj.at = ObjAt::KeyDue;
            st.blanks = 0;
            out.push(st);
        }
        (ObjAt::Colon, b':') => {
            let value = match shape {
                Some(s) => match &s.dispatch {
                    Some(dispatch) if obj.key == 1 => dispatch[obj.pick],
                    _ => s.props[obj.key].1,
                },
                None => ANY,
            };
            obj.at = ObjAt::Value;
            st.stack.push(Frame::Value(value));
            st.blanks = 0;
            out.push(st);
        }
        _ => {}
    }
}

/// Pops the finished value at the top and moves its container on.
fn close_value(st: &mut State) {
    st.stack.pop();
    match st.stack.last_mut() {
        Some(Frame::Obj(obj)) => obj.at = ObjAt::Next,
        Some(Frame::Arr { at, .. }) => *at = ArrAt::Next,
        _ => {}
    }
}

/// The number's next position after `b`, or `None` when `b` does not extend it.
fn number_byte(int: bool, at: NumAt, b: u8) -> Option<NumAt> {
    let digit = b.is_ascii_digit();
    Some(match (at, b) {
        (NumAt::Minus, b'0') => NumAt::Zero,
        (NumAt::Minus, _) if digit => NumAt::Int,
        (NumAt::Int, _) if digit => NumAt::Int,
        (NumAt::Zero | NumAt::Int, b'.') if !int => NumAt::Dot,
        (NumAt::Zero | NumAt::Int | NumAt::Frac, b'e' | b'E') if !int => NumAt::E,
        (NumAt::Dot | NumAt::Frac, _) if digit => NumAt::Frac,
        (NumAt::E, b'+' | b'-') => NumAt::ExpSign,
        (NumAt::E | NumAt::ExpSign | NumAt::Exp, _) if digit => NumAt::Exp,
        _ => return None,
    })
}

#[cfg(test)]
#[path = "matcher_tests.rs"]
mod tests;

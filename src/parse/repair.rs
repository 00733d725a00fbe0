//! JSON repair for call bodies (docs/qwen-formats.md §4.5): strict JSON first; only when that
//! fails, a lenient reader that escapes raw control characters in strings, reads Python literals
//! and single-quoted strings, drops trailing commas and closes missing braces when allowed. Each
//! fix it applies is recorded as a [`Repair`].

use serde_json::{Map, Value};

use super::event::Repair;

/// Deepest nesting the lenient reader follows (keeps hostile input from exhausting the stack).
const MAX_DEPTH: usize = 64;

/// The JSON values read from a body, plus the text that followed them.
#[derive(Debug)]
pub(crate) struct Values<'a> {
    pub values: Vec<Value>,
    pub repairs: Vec<Repair>,
    /// Text after the values that is not JSON (prose after a call whose block never closed):
    /// always a slice of the body read, empty or not.
    pub leftover: &'a str,
}

impl Values<'_> {
    /// Where the values end in `text`, a string whose slice was read (the body itself or one
    /// holding it): where the leftover starts. The reader trims the body's end, so the
    /// leftover's length does not say; a leftover outside `text` gives its end.
    pub(crate) fn end_in(&self, text: &str) -> usize {
        (self.leftover.as_ptr() as usize)
            .checked_sub(text.as_ptr() as usize)
            .filter(|&end| end <= text.len() && text.is_char_boundary(end))
            .unwrap_or(text.len())
    }
}

/// Reads a sequence of JSON values from `body`. `closes` is how many missing closers may be added
/// at the end: a block that was explicitly closed may have lost several; one that never closed
/// only its outer object (so a half-written `arguments` is never executed).
pub(crate) fn parse_values(body: &str, closes: usize) -> Result<Values<'_>, String> {
    let mut repairs = Vec::new();
    let mut text = body.trim();
    if let Some(inner) = strip_fence(text) {
        repairs.push(Repair::CodeFence);
        text = inner;
    }
    let mut values = Vec::new();
    let mut pos = 0;
    let bytes = text.as_bytes();
    loop {
        while pos < bytes.len() && matches!(bytes[pos], b' ' | b'\n' | b'\r' | b'\t' | b',') {
            pos += 1;
        }
        let ws_end = pos;
        while pos < bytes.len() && matches!(bytes[pos], b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')
        {
            pos += 1;
        }
        if pos > ws_end && !repairs.contains(&Repair::StrayClosers) {
            repairs.push(Repair::StrayClosers);
        }
        if pos >= bytes.len() {
            break;
        }
        if !matches!(bytes[pos], b'{' | b'[') {
            if values.is_empty() {
                return Err(describe_start(&text[pos..]));
            }
            return Ok(Values {
                values,
                repairs,
                leftover: &text[pos..],
            });
        }
        let rest = &text[pos..];
        let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        match stream.next() {
            Some(Ok(v)) => {
                pos += stream.byte_offset();
                values.push(v);
            }
            _ => {
                let mut reader = Lenient {
                    s: rest.as_bytes(),
                    i: 0,
                    closes,
                    repairs: Vec::new(),
                };
                let v = reader.value(0).map_err(|e| e.describe(rest, reader.i))?;
                pos += reader.i;
                for r in reader.repairs {
                    if !repairs.contains(&r) {
                        repairs.push(r);
                    }
                }
                values.push(v);
            }
        }
    }
    if values.is_empty() {
        return Err("empty body".into());
    }
    Ok(Values {
        values,
        repairs,
        // Empty, but still a slice of `body`: callers locate the values' end by it.
        leftover: &text[text.len()..],
    })
}

/// Reads one value leniently (used for XML parameter values typed as array or object).
pub(crate) fn parse_lenient(text: &str) -> Option<(Value, Vec<Repair>)> {
    let text = text.trim();
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        return Some((v, Vec::new()));
    }
    let mut reader = Lenient {
        s: text.as_bytes(),
        i: 0,
        closes: 0,
        repairs: Vec::new(),
    };
    let v = reader.value(0).ok()?;
    reader.skip_ws();
    (reader.i == text.len()).then_some((v, reader.repairs))
}

/// The inside of a markdown fence (```` ```json\n…\n``` ````), if `text` is one.
fn strip_fence(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("```")?;
    let nl = rest.find('\n')?;
    let inner = &rest[nl + 1..];
    Some(inner.trim_end().strip_suffix("```").unwrap_or(inner).trim())
}

fn describe_start(text: &str) -> String {
    let head: String = text.chars().take(24).collect();
    format!("expected an object, found `{head}`")
}

enum LErr {
    Eof,
    Unexpected(u8),
    TooDeep,
}

impl LErr {
    fn describe(&self, text: &str, at: usize) -> String {
        match self {
            Self::Eof => "it ends before the JSON is complete".into(),
            Self::Unexpected(c) => {
                let line = text[..at.min(text.len())].matches('\n').count() + 1;
                format!("unexpected `{}` on line {line}", char::from(*c))
            }
            Self::TooDeep => "nested too deeply".into(),
        }
    }
}

struct Lenient<'a> {
    s: &'a [u8],
    i: usize,
    closes: usize,
    repairs: Vec<Repair>,
}

impl Lenient<'_> {
    fn note(&mut self, r: Repair) {
        if !self.repairs.contains(&r) {
            self.repairs.push(r);
        }
    }

    fn skip_ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Result<u8, LErr> {
        self.skip_ws();
        self.s.get(self.i).copied().ok_or(LErr::Eof)
    }

    fn value(&mut self, depth: usize) -> Result<Value, LErr> {
        if depth > MAX_DEPTH {
            return Err(LErr::TooDeep);
        }
        match self.peek()? {
            b'{' => self.object(depth),
            b'[' => self.array(depth),
            q @ (b'"' | b'\'') => self.string(q).map(Value::String),
            b'-' | b'0'..=b'9' => self.number(),
            _ => self.word(),
        }
    }

    /// At end of input after a complete member: close the container if allowed.
    fn close_at_eof(&mut self) -> Result<(), LErr> {
        if self.i >= self.s.len() && self.closes > 0 {
            self.closes -= 1;
            self.note(Repair::MissingBraces);
            return Ok(());
        }
        Err(LErr::Eof)
    }

    fn object(&mut self, depth: usize) -> Result<Value, LErr> {
        self.i += 1;
        let mut map = Map::new();
        loop {
            let c = match self.peek() {
                Ok(c) => c,
                Err(_) => {
                    self.close_at_eof()?;
                    return Ok(Value::Object(map));
                }
            };
            if c == b'}' {
                self.i += 1;
                return Ok(Value::Object(map));
            }
            let key = match c {
                b'"' | b'\'' => self.string(c)?,
                other => return Err(LErr::Unexpected(other)),
            };
            if self.peek()? != b':' {
                return Err(LErr::Unexpected(self.s[self.i]));
            }
            self.i += 1;
            let v = self.value(depth + 1)?;
            map.insert(key, v);
            match self.peek() {
                Ok(b',') => {
                    self.i += 1;
                    if self.peek().ok() == Some(b'}') {
                        self.note(Repair::TrailingCommas);
                    }
                }
                Ok(b'}') => {}
                Ok(other) => return Err(LErr::Unexpected(other)),
                Err(_) => {
                    self.close_at_eof()?;
                    return Ok(Value::Object(map));
                }
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, LErr> {
        self.i += 1;
        let mut items = Vec::new();
        loop {
            let c = match self.peek() {
                Ok(c) => c,
                Err(_) => {
                    self.close_at_eof()?;
                    return Ok(Value::Array(items));
                }
            };
            if c == b']' {
                self.i += 1;
                return Ok(Value::Array(items));
            }
            items.push(self.value(depth + 1)?);
            match self.peek() {
                Ok(b',') => {
                    self.i += 1;
                    if self.peek().ok() == Some(b']') {
                        self.note(Repair::TrailingCommas);
                    }
                }
                Ok(b']') => {}
                Ok(other) => return Err(LErr::Unexpected(other)),
                Err(_) => {
                    self.close_at_eof()?;
                    return Ok(Value::Array(items));
                }
            }
        }
    }

    /// A string delimited by `quote`. Raw control characters are kept (the JSON would have
    /// escaped them); inside a double-quoted string an apostrophe is just an apostrophe.
    fn string(&mut self, quote: u8) -> Result<String, LErr> {
        if quote == b'\'' {
            self.note(Repair::PythonLiterals);
        }
        self.i += 1;
        let mut out: Vec<u8> = Vec::new();
        while let Some(&c) = self.s.get(self.i) {
            self.i += 1;
            if c == quote {
                return Ok(String::from_utf8_lossy(&out).into_owned());
            }
            if c < 0x20 {
                self.note(Repair::ControlChars);
                out.push(c);
                continue;
            }
            if c != b'\\' {
                out.push(c);
                continue;
            }
            let e = *self.s.get(self.i).ok_or(LErr::Eof)?;
            self.i += 1;
            match e {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'r' => out.push(b'\r'),
                b'b' => out.push(8),
                b'f' => out.push(12),
                b'u' => self.unicode_escape(&mut out),
                b'"' | b'\\' | b'/' | b'\'' => out.push(e),
                other => {
                    out.push(b'\\');
                    out.push(other);
                }
            }
        }
        Err(LErr::Eof)
    }

    fn unicode_escape(&mut self, out: &mut Vec<u8>) {
        let hex = self
            .s
            .get(self.i..self.i + 4)
            .and_then(|h| std::str::from_utf8(h).ok());
        let code = hex.and_then(|h| u32::from_str_radix(h, 16).ok());
        match code.and_then(char::from_u32) {
            Some(ch) => {
                self.i += 4;
                let mut buf = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
            }
            // A lone surrogate or a bad escape: keep the text as written.
            None => out.extend_from_slice(b"\\u"),
        }
    }

    fn number(&mut self) -> Result<Value, LErr> {
        let start = self.i;
        while self.i < self.s.len()
            && matches!(
                self.s[self.i],
                b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'
            )
        {
            self.i += 1;
        }
        let span =
            std::str::from_utf8(&self.s[start..self.i]).map_err(|_| LErr::Unexpected(b'-'))?;
        serde_json::from_str::<Value>(span).map_err(|_| LErr::Unexpected(self.s[start]))
    }

    fn word(&mut self) -> Result<Value, LErr> {
        let start = self.i;
        while self.i < self.s.len() && self.s[self.i].is_ascii_alphabetic() {
            self.i += 1;
        }
        let v = match &self.s[start..self.i] {
            b"true" => Value::Bool(true),
            b"false" => Value::Bool(false),
            b"null" => Value::Null,
            b"True" | b"False" | b"None" => {
                self.note(Repair::PythonLiterals);
                match self.s[start] {
                    b'T' => Value::Bool(true),
                    b'F' => Value::Bool(false),
                    _ => Value::Null,
                }
            }
            _ if self.i >= self.s.len() && start < self.s.len() => return Err(LErr::Eof),
            _ => return Err(LErr::Unexpected(self.s[start])),
        };
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn one(body: &str, closes: usize) -> (Value, Vec<Repair>) {
        let v = parse_values(body, closes).unwrap();
        assert_eq!(v.values.len(), 1, "{body}");
        (v.values[0].clone(), v.repairs)
    }

    #[test]
    fn strict_json_needs_no_repair() {
        let (v, r) = one(r#"{"a": "it's", "b": [1, 2]}"#, 0);
        assert_eq!(v, json!({"a": "it's", "b": [1, 2]}));
        assert!(r.is_empty());
    }

    #[test]
    fn apostrophes_survive_python_fallback() {
        let (v, r) = one(r#"{'a': "it's", 'b': True, 'c': None}"#, 0);
        assert_eq!(v, json!({"a": "it's", "b": true, "c": null}));
        assert_eq!(r, vec![Repair::PythonLiterals]);
    }

    #[test]
    fn raw_newlines_in_strings_are_escaped() {
        let (v, r) = one("{\"c\": \"line1\nline2\t\"}", 0);
        assert_eq!(v, json!({"c": "line1\nline2\t"}));
        assert_eq!(r, vec![Repair::ControlChars]);
    }

    #[test]
    fn missing_outer_brace_closes_only_when_allowed() {
        let body = r#"{"name": "f", "arguments": {"a": 1}"#;
        assert_eq!(one(body, 1).0, json!({"name": "f", "arguments": {"a": 1}}));
        assert!(parse_values(body, 0).is_err());
        // Arguments not complete: one close is not enough.
        assert!(parse_values(r#"{"name": "f", "arguments": {"a": 1"#, 1).is_err());
        assert!(parse_values(r#"{"name": "f", "arguments": {"a": "unterminated"#, 9).is_err());
    }

    #[test]
    fn stray_closers_and_sequences() {
        let v = parse_values(r#"{"a": 1}}} {"b": 2}]"#, 0).unwrap();
        assert_eq!(v.values, vec![json!({"a": 1}), json!({"b": 2})]);
        assert_eq!(v.repairs, vec![Repair::StrayClosers]);
    }

    #[test]
    fn fence_and_trailing_commas() {
        let (v, r) = one("```json\n{\"a\": [1, 2,],}\n```", 0);
        assert_eq!(v, json!({"a": [1, 2]}));
        assert_eq!(r, vec![Repair::CodeFence, Repair::TrailingCommas]);
    }

    #[test]
    fn leftover_text_is_returned() {
        let v = parse_values("{\"a\": 1}\nDone.", 0).unwrap();
        assert_eq!(v.leftover, "Done.");
    }

    #[test]
    fn garbage_fails_with_a_reason() {
        let e = parse_values(r#"{"a": 1 "b": 2}"#, 0).unwrap_err();
        assert!(e.contains("unexpected `\"`"), "{e}");
        assert!(
            parse_values("hello", 0)
                .unwrap_err()
                .contains("expected an object")
        );
    }
}

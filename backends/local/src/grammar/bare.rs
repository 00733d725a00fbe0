//! Where a call written without the tags starts. Small models (Qwen2.5-Coder 0.5B and 1.5B)
//! write their calls as bare JSON far more often than inside `<tool_call>`: pretty-printed in a
//! fence at the start of the answer, or one line of `{"name": …}` after some prose.
//!
//! Two openings are recognised:
//! - **The answer opens with the object** (after blanks and at most a fence line), on one line
//!   or pretty-printed;
//! - **a later line opens `{"name"`** on one line.
//!
//! Either may also be a JSON record the user asked for (`{"name": "Alice", "age": 30}`), so the
//! call is held only once the model itself has written a declared tool's name (see
//! [`name_written`]); a name the grammar refuses lets the object go. Holding an invented name
//! to a declared one was tried: the 0.5B's `create_gitignore` became `list_dir`, a call that
//! runs and does nothing for the task. Pretty-printed JSON after prose (`{` alone on a line, the
//! keys below) is never taken for a call, nor is `{"name"` in the middle of a line.

/// The key that opens a call object.
const NAME_KEY: &[u8] = b"\"name\"";

/// How much of an answer's start is watched for the opening form.
pub(super) const OPENING_BYTES: usize = 64;

fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

fn skip_blanks(bytes: &[u8], from: usize) -> usize {
    from + bytes[from..].iter().take_while(|&&b| is_blank(b)).count()
}

/// Where the object starts, when `answer` (everything written so far) opens with blanks, at most
/// one fence line (```` ``` ```` or ```` ```json ````), then `{` and `"name"`.
pub(super) fn opening_call(answer: &[u8]) -> Option<usize> {
    let mut at = skip_blanks(answer, 0);
    if answer[at..].starts_with(b"```") {
        let line = answer[at..].iter().position(|&b| b == b'\n')?;
        if !answer[at + 3..at + line]
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || is_blank(*b))
        {
            return None;
        }
        at = skip_blanks(answer, at + line);
    }
    let brace = at;
    if answer.get(brace) != Some(&b'{') {
        return None;
    }
    let key = skip_blanks(answer, brace + 1);
    answer[key..].starts_with(NAME_KEY).then_some(brace)
}

/// Where the last line of `tail` opens a call on one line: blanks, `{`, blanks (not a line
/// break), then `"name"`.
pub(super) fn line_call(tail: &[u8]) -> Option<usize> {
    let line = tail.iter().rposition(|&b| b == b'\n')? + 1;
    let inline_blank = |b: &&u8| matches!(b, b' ' | b'\t');
    let start = line + tail[line..].iter().take_while(inline_blank).count();
    let rest = tail[start..].strip_prefix(b"{")?;
    let rest = &rest[rest.iter().take_while(inline_blank).count()..];
    rest.starts_with(NAME_KEY).then_some(start)
}

/// True once `object` (the bytes from its `{`) holds the whole name string:
/// `{ "name" : "…"`.
pub(super) fn name_written(object: &[u8]) -> bool {
    let Some(rest) = object.strip_prefix(b"{") else {
        return false;
    };
    let at = skip_blanks(rest, 0);
    let Some(rest) = rest[at..].strip_prefix(NAME_KEY) else {
        return false;
    };
    let at = skip_blanks(rest, 0);
    let Some(rest) = rest[at..].strip_prefix(b":") else {
        return false;
    };
    let at = skip_blanks(rest, 0);
    let Some(rest) = rest[at..].strip_prefix(b"\"") else {
        return false;
    };
    let mut escaped = false;
    for &b in rest {
        match b {
            _ if escaped => escaped = false,
            b'\\' => escaped = true,
            b'"' => return true,
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_that_opens_with_the_object_is_a_call_fenced_or_not_pretty_or_not() {
        for answer in [
            "{\"name\"",
            "\n{\"name\": \"x\"",
            "```json\n{\n  \"name\"",
            "  ```\n\n{ \"name\"",
        ] {
            let start = opening_call(answer.as_bytes());
            assert_eq!(start, answer.find('{'), "{answer:?}");
        }
        for answer in [
            "Sure: {\"name\"",
            "```json\n[{\"name\"",
            "```json {\"name\"",
            "{\"path\"",
            "{\"na",
            "```js",
        ] {
            assert_eq!(opening_call(answer.as_bytes()), None, "{answer:?}");
        }
    }

    #[test]
    fn a_later_line_is_a_call_only_when_it_opens_the_object_on_one_line() {
        assert_eq!(line_call(b"Sure.\n  {\"name\""), Some(8));
        assert_eq!(line_call(b"Sure.\n{ \"name\": "), Some(6));
        assert_eq!(line_call(b"Sure.\n{\n  \"name\""), None);
        assert_eq!(line_call(b"Use {\"name\""), None);
        assert_eq!(line_call(b"x\nUse {\"name\""), None);
    }

    #[test]
    fn the_name_is_written_when_its_string_closes() {
        assert!(!name_written(b"{\"name\": \"read_fi"));
        assert!(!name_written(b"{\"name\": \"a\\\""));
        assert!(name_written(b"{\"name\": \"read_file\""));
        assert!(name_written(b"{ \"name\" :\n \"a\\\"b\", \"arguments\""));
        assert!(!name_written(b"{\"path\": \"a\""));
    }
}

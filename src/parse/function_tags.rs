//! Two more ways models name a function in tags (docs/qwen-formats.md §4): the name as an
//! attribute, `<function name="X">{args}</function>`, and the name as the tag's text,
//! `<function>X</function>{args}`. Both become the Hermes shape `{"name", "arguments"}` for
//! the normal repair path, so an unknown name or bad arguments are reported as usual.

use serde_json::{Map, Value};

pub(crate) const ATTR_OPEN: &str = "<function name=";
const TEXT_OPEN: &str = "<function>";
const CLOSE: &str = "</function>";

/// A call written with function tags: its name, the text that should hold the arguments, and
/// whatever follows the call.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TaggedCall<'a> {
    pub name: &'a str,
    pub arguments: &'a str,
    pub leftover: &'a str,
}

/// Reads `body` (leading whitespace allowed) as one of the two forms; `None` if it is neither.
pub(crate) fn tagged_call(body: &str) -> Option<TaggedCall<'_>> {
    let body = body.trim_start();
    if let Some(after) = body.strip_prefix(ATTR_OPEN) {
        let (name, rest) = attribute_name(after)?;
        let (arguments, leftover) = match rest.find(CLOSE) {
            Some(end) => (&rest[..end], &rest[end + CLOSE.len()..]),
            None => (rest, ""),
        };
        return Some(TaggedCall {
            name,
            arguments,
            leftover,
        });
    }
    let after = body.strip_prefix(TEXT_OPEN)?;
    let end = after.find(CLOSE)?;
    let name = after[..end].trim();
    if name.is_empty() || name.contains(['\n', '<', '>']) {
        return None;
    }
    let rest = &after[end + CLOSE.len()..];
    let arguments = rest.trim_start();
    Some(TaggedCall {
        name,
        arguments,
        leftover: "",
    })
}

/// `"X">`, `'X'>` or `X>` after `name=`: the name and the text after the `>`.
pub(crate) fn attribute_name(after: &str) -> Option<(&str, &str)> {
    let gt = after.find('>')?;
    let quoted = after[..gt].trim();
    let name = quoted
        .strip_prefix('"')
        .and_then(|q| q.strip_suffix('"'))
        .or_else(|| quoted.strip_prefix('\'').and_then(|q| q.strip_suffix('\'')))
        .unwrap_or(quoted)
        .trim();
    if name.is_empty() || name.contains(['\n', '"', '\'', '<', ' ']) {
        return None;
    }
    Some((name, &after[gt + 1..]))
}

/// The Hermes-shaped call value for `name` with already-parsed `arguments`.
pub(crate) fn as_hermes(name: &str, arguments: Value) -> Value {
    let mut call = Map::new();
    call.insert("name".to_string(), Value::String(name.to_string()));
    call.insert("arguments".to_string(), arguments);
    Value::Object(call)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_as_an_attribute_in_any_quoting() {
        for body in [
            r#"<function name="read_file">{"path": "a"}</function>"#,
            r#"  <function name='read_file'>{"path": "a"}</function>"#,
            r#"<function name=read_file>{"path": "a"}</function>"#,
        ] {
            let call = tagged_call(body).unwrap();
            assert_eq!(call.name, "read_file", "{body}");
            assert_eq!(call.arguments, r#"{"path": "a"}"#, "{body}");
        }
        let open = tagged_call(r#"<function name="bash">{"command": "ls"}"#).unwrap();
        assert_eq!(open.arguments, r#"{"command": "ls"}"#);
    }

    #[test]
    fn the_name_as_the_tags_text_with_the_arguments_after() {
        let call = tagged_call("<function>read_file</function>\n{\"path\": \"a\"}\n").unwrap();
        assert_eq!(call.name, "read_file");
        assert_eq!(call.arguments, "{\"path\": \"a\"}\n");
    }

    #[test]
    fn other_text_is_neither_form() {
        for body in [
            "<function=read_file>",
            "<function>\n</function>{}",
            r#"<function name="">{}</function>"#,
            r#"<function name="a b">{}</function>"#,
            "{\"name\": \"x\"}",
        ] {
            assert_eq!(tagged_call(body), None, "{body}");
        }
    }
}

//! JSON written the way the Qwen chat templates' `tojson` writes it (Python `json.dumps` defaults:
//! `", "` and `": "` separators, non-ASCII kept), so the rendered prompt is the token stream the
//! models were trained on.

use std::io;

use serde::Serialize;
use serde_json::ser::Formatter;

struct PyFormatter;

impl Formatter for PyFormatter {
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }
}

/// `value` as Python's `json.dumps(value, ensure_ascii=False)` would write it.
pub(crate) fn to_string<T: Serialize + ?Sized>(value: &T) -> String {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, PyFormatter);
    // Serializing a `serde_json::Value` or a string into memory cannot fail.
    if value.serialize(&mut ser).is_err() {
        return String::from("null");
    }
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn python_separators_and_unicode() {
        let v = json!({"a": [1, 2.5, "é\n\"q\""], "b": {"c": null, "d": true}});
        assert_eq!(
            to_string(&v),
            r#"{"a": [1, 2.5, "é\n\"q\""], "b": {"c": null, "d": true}}"#
        );
        assert_eq!(to_string(&json!([])), "[]");
        assert_eq!(to_string(&json!({})), "{}");
    }
}

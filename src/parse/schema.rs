//! Argument validation against a tool's JSON Schema: required fields and basic JSON types, with
//! the few coercions that are safe (`"5"` → 5 where the schema says integer; XML text by type).

use hearth_backend::ToolSpec;
use serde_json::{Map, Value};

use super::event::{MalformedReason, Repair, type_name};
use super::repair::parse_lenient;

/// The schema of one property of `tool`, if declared.
pub(crate) fn property<'a>(tool: &'a ToolSpec, key: &str) -> Option<&'a Value> {
    tool.parameters.get("properties")?.get(key)
}

/// The declared property names of `tool`.
pub(crate) fn property_names(tool: &ToolSpec) -> Vec<&str> {
    match tool.parameters.get("properties").and_then(Value::as_object) {
        Some(p) => p.keys().map(String::as_str).collect(),
        None => Vec::new(),
    }
}

/// The required property names of `tool`.
pub(crate) fn required(tool: &ToolSpec) -> Vec<&str> {
    match tool.parameters.get("required").and_then(Value::as_array) {
        Some(r) => r.iter().filter_map(Value::as_str).collect(),
        None => Vec::new(),
    }
}

fn types(schema: Option<&Value>) -> Vec<&str> {
    match schema.and_then(|s| s.get("type")) {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn matches(v: &Value, ty: &str) -> bool {
    match ty {
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => true,
    }
}

/// Converts XML parameter text to the type the schema declares (docs/qwen-formats.md §4.7: null,
/// bool, int, number, array/object via JSON then Python literal, otherwise string). Returns
/// whether the value changed type.
pub(crate) fn coerce_text(schema: Option<&Value>, text: &str) -> (Value, bool) {
    let tys = types(schema);
    let t = text.trim();
    // Qwen's templates render values with Python's `str()`, so a model writes `None` for null:
    // null where the schema allows it, even beside "string".
    if tys.contains(&"null") && (t.eq_ignore_ascii_case("none") || t.eq_ignore_ascii_case("null")) {
        return (Value::Null, true);
    }
    if tys.is_empty() || tys.contains(&"string") {
        return (Value::String(text.to_string()), false);
    }
    for ty in &tys {
        let v = match *ty {
            "boolean" if t.eq_ignore_ascii_case("true") => Some(Value::Bool(true)),
            "boolean" if t.eq_ignore_ascii_case("false") => Some(Value::Bool(false)),
            "integer" => t.parse::<i64>().ok().map(Value::from),
            "number" => serde_json::from_str::<Value>(t)
                .ok()
                .filter(Value::is_number),
            "array" | "object" => parse_lenient(t).map(|(v, _)| v).filter(|v| matches(v, ty)),
            _ => None,
        };
        if let Some(v) = v {
            return (v, true);
        }
    }
    (Value::String(text.to_string()), false)
}

/// Checks `args` against `tool`'s schema, coercing string values the schema types otherwise.
pub(crate) fn validate(
    tool: &ToolSpec,
    args: &mut Map<String, Value>,
    repairs: &mut Vec<Repair>,
) -> Result<(), MalformedReason> {
    let missing: Vec<String> = required(tool)
        .into_iter()
        .filter(|k| !args.contains_key(*k))
        .map(str::to_string)
        .collect();
    if !missing.is_empty() {
        return Err(MalformedReason::MissingRequired {
            tool: tool.name.clone(),
            missing,
        });
    }
    for (key, value) in args.iter_mut() {
        let schema = property(tool, key);
        let tys = types(schema);
        if tys.is_empty() || tys.iter().any(|t| matches(value, t)) {
            continue;
        }
        if let Value::String(s) = value {
            let (v, changed) = coerce_text(schema, s);
            if changed {
                *value = v;
                if !repairs.contains(&Repair::CoercedType) {
                    repairs.push(Repair::CoercedType);
                }
                continue;
            }
        }
        return Err(MalformedReason::WrongType {
            tool: tool.name.clone(),
            field: key.clone(),
            expected: expected(&tys),
            found: type_name(value),
        });
    }
    Ok(())
}

fn expected(tys: &[&str]) -> String {
    let named: Vec<String> = tys
        .iter()
        .map(|t| match *t {
            "array" | "object" | "integer" => format!("an {t}"),
            other => format!("a {other}"),
        })
        .collect();
    named.join(" or ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool() -> ToolSpec {
        ToolSpec {
            name: "t".into(),
            description: String::new(),
            parameters: json!({"type": "object", "properties": {
                "n": {"type": "integer"}, "ok": {"type": "boolean"}, "s": {"type": "string"},
                "xs": {"type": "array"}, "o": {"type": ["object", "null"]}
            }, "required": ["s"]}),
        }
    }

    #[test]
    fn coerces_xml_text_by_schema() {
        let t = tool();
        assert_eq!(coerce_text(property(&t, "n"), " 42 "), (json!(42), true));
        assert_eq!(coerce_text(property(&t, "ok"), "True"), (json!(true), true));
        assert_eq!(coerce_text(property(&t, "s"), "5"), (json!("5"), false));
        assert_eq!(
            coerce_text(property(&t, "xs"), "['a', 1]"),
            (json!(["a", 1]), true)
        );
        assert_eq!(coerce_text(property(&t, "o"), "None"), (json!(null), true));
        assert_eq!(
            coerce_text(property(&t, "n"), "many"),
            (json!("many"), false)
        );
    }

    #[test]
    fn validates_required_and_types() {
        let t = tool();
        let mut r = Vec::new();
        let mut a = json!({"n": 1}).as_object().cloned().unwrap();
        let e = validate(&t, &mut a, &mut r).unwrap_err();
        assert_eq!(e.to_string(), "`t` is missing required argument(s): s");
        let mut a = json!({"s": "x", "n": "7"}).as_object().cloned().unwrap();
        validate(&t, &mut a, &mut r).unwrap();
        assert_eq!(a["n"], json!(7));
        assert_eq!(r, vec![Repair::CoercedType]);
        let mut a = json!({"s": "x", "n": "seven"})
            .as_object()
            .cloned()
            .unwrap();
        let e = validate(&t, &mut a, &mut r).unwrap_err();
        assert_eq!(
            e.to_string(),
            "argument `n` of `t` must be an integer, not a string"
        );
    }
}

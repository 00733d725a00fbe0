//! Native `tool_calls` go through the same repair and schema validation as in-band calls.

use hearth_backend::{NativeToolCall, ToolSpec};
use serde_json::Value;

use super::event::{Malformed, MalformedReason, ParsedCall, Repair};
use super::normalize::{find_tool, object_arguments, unknown};
use super::repair::parse_values;
use super::schema;

/// Repairs and validates a call the server parsed (its `arguments` are JSON text as the model
/// wrote it, possibly malformed).
pub fn repair_native_call(
    call: &NativeToolCall,
    tools: &[ToolSpec],
) -> Result<ParsedCall, Malformed> {
    let fail = |reason| Malformed {
        raw: call.arguments.clone(),
        reason,
    };
    let Some((tool, exact)) = find_tool(tools, call.name.trim()) else {
        return Err(fail(unknown(&call.name, tools)));
    };
    let mut repairs = Vec::new();
    if !exact {
        repairs.push(Repair::NameCase);
    }
    let value = if call.arguments.trim().is_empty() {
        Value::Null
    } else if let Ok(v) = serde_json::from_str::<Value>(&call.arguments) {
        // Strict first; a JSON string holding the object is decoded below.
        v
    } else {
        let parsed = parse_values(&call.arguments, 1)
            .map_err(|detail| fail(MalformedReason::InvalidJson { detail }))?;
        repairs.extend(parsed.repairs);
        parsed.values.into_iter().next().unwrap_or(Value::Null)
    };
    let mut args = object_arguments(value, &mut repairs).map_err(|found| {
        fail(MalformedReason::ArgumentsNotObject {
            tool: tool.name.clone(),
            found,
        })
    })?;
    schema::validate(tool, &mut args, &mut repairs).map_err(fail)?;
    Ok(ParsedCall {
        name: tool.name.clone(),
        arguments: Value::Object(args),
        repairs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::test_support::tools;
    use serde_json::json;

    fn native(name: &str, arguments: &str) -> NativeToolCall {
        NativeToolCall {
            id: "call_1".into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn native_arguments_are_repaired_and_validated() {
        let t = tools();
        let ok = repair_native_call(&native("read_file", r#"{"path": "a"}"#), &t).unwrap();
        assert_eq!(
            (
                ok.name.as_str(),
                ok.arguments.clone(),
                ok.repairs.is_empty()
            ),
            ("read_file", json!({"path": "a"}), true)
        );
        let fixed =
            repair_native_call(&native("run", "{'command': 'ls', 'timeout': '5'}"), &t).unwrap();
        assert_eq!(fixed.arguments, json!({"command": "ls", "timeout": 5}));
        assert!(
            fixed.repairs.contains(&Repair::PythonLiterals)
                && fixed.repairs.contains(&Repair::CoercedType)
        );
        let empty = repair_native_call(&native("list_dir", ""), &t).unwrap();
        assert_eq!(empty.arguments, json!({}));
        let double =
            repair_native_call(&native("read_file", r#""{\"path\": \"a\"}""#), &t).unwrap();
        assert_eq!(double.arguments, json!({"path": "a"}));
        let e = repair_native_call(&native("write_file", r#"{"path": "a"}"#), &t).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`write_file` is missing required argument(s): content"
        );
        let e = repair_native_call(&native("delete_everything", "{}"), &t).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("unknown tool `delete_everything`")
        );
        let e = repair_native_call(&native("run", r#"{"command": "ls"#), &t).unwrap_err();
        assert!(matches!(e.reason, MalformedReason::InvalidJson { .. }));
    }
}

//! Turns a parsed JSON value into tool calls (docs/qwen-formats.md §4.6 and §4.8): unwraps the
//! shapes models drift into, resolves the name against the declared tools (never guessing), then
//! validates the arguments against the schema.

use hearth_backend::ToolSpec;
use serde_json::{Map, Value};

use super::config::TextCalls;
use super::event::{MalformedReason, ParsedCall, Repair, type_name};
use super::repair::parse_lenient;
use super::schema;

/// How sure the parser is that a block was meant as a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Intent {
    /// In `<tool_call>` or `<function=…>`: a failure is Malformed.
    Explicit,
    /// Bare JSON, a fence or an alternative wrapper: only a call-shaped object naming a declared
    /// tool counts; anything else stays text.
    Candidate,
}

/// What a value turned out to be.
#[derive(Debug)]
pub(crate) enum Outcome {
    Calls(Vec<ParsedCall>),
    Failed(MalformedReason),
    NotACall,
}

/// The keys of a call object: one with only these, naming no declared tool, is an invented call.
pub(crate) const CALL_KEYS: [&str; 5] = ["name", "arguments", "parameters", "type", "id"];

/// Keys under which models put the tool name when they do not use `name`.
const NAME_ALIASES: [&str; 5] = ["tool", "tool_name", "function", "action", "command"];

/// Interprets `value` (an object, or an array of objects = several calls).
pub(crate) fn to_calls(
    value: Value,
    tools: &[ToolSpec],
    intent: Intent,
    text_calls: TextCalls,
    base: &[Repair],
) -> Outcome {
    let items = match value {
        Value::Array(items) if !items.is_empty() => items,
        other => vec![other],
    };
    let mut calls = Vec::new();
    for item in items {
        match one_call(item, tools, intent, text_calls, base) {
            Outcome::Calls(mut c) => calls.append(&mut c),
            other => return other,
        }
    }
    Outcome::Calls(calls)
}

fn one_call(
    value: Value,
    tools: &[ToolSpec],
    intent: Intent,
    text_calls: TextCalls,
    base: &[Repair],
) -> Outcome {
    let mut repairs = base.to_vec();
    let Value::Object(mut obj) = value else {
        return match intent {
            Intent::Explicit => Outcome::Failed(MalformedReason::InvalidJson {
                detail: format!("expected an object, found {}", type_name(&value)),
            }),
            Intent::Candidate => Outcome::NotACall,
        };
    };
    if let Some(Value::Object(inner)) = obj.get("function")
        && inner.contains_key("name")
    {
        let inner = inner.clone();
        obj = inner;
        repairs.push(Repair::Unwrapped);
    }
    let named = obj.get("name").and_then(Value::as_str).map(str::to_string);
    if intent == Intent::Candidate {
        let declared = named.as_deref().and_then(|n| find_tool(tools, n)).is_some();
        let has_args = ["arguments", "parameters"]
            .iter()
            .any(|k| obj.contains_key(*k));
        if let Some(name) = named.as_deref()
            && !declared
            && has_args
            && text_calls == TextCalls::Take
            && obj.keys().all(|k| CALL_KEYS.contains(&k.as_str()))
        {
            // Exactly a call's shape, naming a tool that does not exist: an invented tool.
            return Outcome::Failed(unknown(name, tools));
        }
        if !(declared && has_args) {
            return match aliased_name(&obj, tools) {
                Some(tool) => Outcome::Failed(wrong_keys(tool, &obj)),
                None => Outcome::NotACall,
            };
        }
    }
    let args = match take_arguments(&mut obj, &mut repairs) {
        Ok(a) => a,
        Err(found) => {
            let tool = named.unwrap_or_default();
            return Outcome::Failed(MalformedReason::ArgumentsNotObject { tool, found });
        }
    };
    finish_call(named, args, obj, tools, repairs)
}

fn finish_call(
    named: Option<String>,
    mut args: Map<String, Value>,
    obj: Map<String, Value>,
    tools: &[ToolSpec],
    mut repairs: Vec<Repair>,
) -> Outcome {
    let tool = match named {
        Some(name) => match find_tool(tools, &name) {
            Some((t, exact)) => {
                if !exact {
                    repairs.push(Repair::NameCase);
                }
                t
            }
            None => return Outcome::Failed(unknown(&name, tools)),
        },
        None => match name_from_args(&mut args, tools) {
            Some(t) => {
                repairs.push(Repair::NameInArguments);
                t
            }
            None => {
                if let Some(tool) = aliased_name(&obj, tools) {
                    return Outcome::Failed(wrong_keys(tool, &obj));
                }
                match infer(&args, tools) {
                    Ok(t) => {
                        repairs.push(Repair::InferredName);
                        t
                    }
                    Err(candidates) => {
                        return Outcome::Failed(MalformedReason::MissingName { candidates });
                    }
                }
            }
        },
    };
    if let Err(reason) = schema::validate(tool, &mut args, &mut repairs) {
        return Outcome::Failed(reason);
    }
    Outcome::Calls(vec![ParsedCall {
        name: tool.name.clone(),
        arguments: Value::Object(args),
        repairs,
    }])
}

/// Removes and returns the arguments object; `Err` names what was found instead.
fn take_arguments(
    obj: &mut Map<String, Value>,
    repairs: &mut Vec<Repair>,
) -> Result<Map<String, Value>, &'static str> {
    let raw = match (obj.remove("arguments"), obj.remove("parameters")) {
        (Some(a), _) => a,
        (None, Some(p)) => {
            repairs.push(Repair::ParametersKey);
            p
        }
        (None, None) => {
            // `{"name": "read_file", "path": "a"}`: the arguments sit beside the name.
            let flat: Map<String, Value> = obj
                .iter()
                .filter(|(k, _)| !matches!(k.as_str(), "name" | "type" | "id"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if flat.is_empty() {
                repairs.push(Repair::EmptyArguments);
            } else {
                repairs.push(Repair::FlatArguments);
            }
            return Ok(flat);
        }
    };
    object_arguments(raw, repairs)
}

/// Arguments as an object: objects as they are, JSON strings decoded, `""`/null as `{}`.
pub(crate) fn object_arguments(
    raw: Value,
    repairs: &mut Vec<Repair>,
) -> Result<Map<String, Value>, &'static str> {
    match raw {
        Value::Object(m) => Ok(m),
        Value::Null => {
            repairs.push(Repair::EmptyArguments);
            Ok(Map::new())
        }
        Value::String(s) if s.trim().is_empty() => {
            repairs.push(Repair::EmptyArguments);
            Ok(Map::new())
        }
        Value::String(s) => match parse_lenient(&s) {
            Some((Value::Object(m), mut more)) => {
                repairs.push(Repair::ArgumentsString);
                repairs.append(&mut more);
                Ok(m)
            }
            _ => Err("a string"),
        },
        other => Err(type_name(&other)),
    }
}

/// The declared tool named `name`: exact first, then a case-insensitive exact match that is
/// unique. The bool says whether it was exact.
pub(crate) fn find_tool<'a>(tools: &'a [ToolSpec], name: &str) -> Option<(&'a ToolSpec, bool)> {
    if let Some(t) = tools.iter().find(|t| t.name == name) {
        return Some((t, true));
    }
    let mut folded = tools.iter().filter(|t| t.name.eq_ignore_ascii_case(name));
    match (folded.next(), folded.next()) {
        (Some(t), None) => Some((t, false)),
        _ => None,
    }
}

pub(crate) fn unknown(name: &str, tools: &[ToolSpec]) -> MalformedReason {
    MalformedReason::UnknownTool {
        name: name.to_string(),
        available: tools.iter().map(|t| t.name.clone()).collect(),
    }
}

/// `{"arguments": {"name": "read_file", "path": …}}`: the name inside the arguments, when it
/// names a declared tool whose schema has no `name` property of its own.
fn name_from_args<'a>(
    args: &mut Map<String, Value>,
    tools: &'a [ToolSpec],
) -> Option<&'a ToolSpec> {
    let name = args.get("name")?.as_str()?;
    let (tool, _) = find_tool(tools, name)?;
    if schema::property(tool, "name").is_some() {
        return None;
    }
    args.remove("name");
    Some(tool)
}

fn aliased_name<'a>(obj: &Map<String, Value>, tools: &'a [ToolSpec]) -> Option<&'a ToolSpec> {
    NAME_ALIASES
        .iter()
        .filter_map(|k| obj.get(*k)?.as_str())
        .find_map(|n| find_tool(tools, n).map(|(t, _)| t))
}

fn wrong_keys(tool: &ToolSpec, obj: &Map<String, Value>) -> MalformedReason {
    MalformedReason::WrongKeys {
        tool: tool.name.clone(),
        keys: obj.keys().map(|k| format!("\"{k}\"")).collect(),
    }
}

/// The one tool whose schema the argument keys fit (required ⊆ keys ⊆ properties); `Err` lists
/// the candidates when none or several fit.
fn infer<'a>(
    args: &Map<String, Value>,
    tools: &'a [ToolSpec],
) -> Result<&'a ToolSpec, Vec<String>> {
    if args.is_empty() {
        return Err(Vec::new());
    }
    let fits: Vec<&ToolSpec> = tools
        .iter()
        .filter(|t| {
            let props = schema::property_names(t);
            args.keys().all(|k| props.contains(&k.as_str()))
                && schema::required(t).iter().all(|r| args.contains_key(*r))
        })
        .collect();
    match fits.as_slice() {
        [one] => Ok(one),
        many => Err(many.iter().map(|t| t.name.clone()).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::test_support::tool;
    use serde_json::json;

    #[test]
    fn name_is_inferred_only_when_exactly_one_tool_fits() {
        let tools = vec![
            tool("cat", json!({"path": {"type": "string"}}), &["path"]),
            tool(
                "stat",
                json!({"path": {"type": "string"}, "follow": {"type": "boolean"}}),
                &["path"],
            ),
        ];
        let ambiguous = json!({"arguments": {"path": "a"}});
        match to_calls(ambiguous, &tools, Intent::Explicit, TextCalls::Take, &[]) {
            Outcome::Failed(MalformedReason::MissingName { candidates }) => {
                assert_eq!(candidates, vec!["cat", "stat"]);
            }
            other => panic!("{other:?}"),
        }
        let unique = json!({"arguments": {"path": "a", "follow": true}});
        match to_calls(unique, &tools, Intent::Explicit, TextCalls::Take, &[]) {
            Outcome::Calls(c) => assert_eq!(
                (c[0].name.as_str(), c[0].repairs.clone()),
                ("stat", vec![Repair::InferredName])
            ),
            other => panic!("{other:?}"),
        }
        // A candidate (bare JSON) without a declared name is just text.
        assert!(matches!(
            to_calls(
                json!({"path": "a"}),
                &tools,
                Intent::Candidate,
                TextCalls::Take,
                &[]
            ),
            Outcome::NotACall
        ));
    }
}

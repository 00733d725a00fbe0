//! Qwen3-Coder XML call bodies: `<function=NAME>` then `<parameter=K>\nVALUE\n</parameter>` per
//! argument (docs/qwen-formats.md §4.5). Values are raw text, typed by the tool's schema; missing
//! `</parameter>` / `</function>` are tolerated.

use hearth_backend::ToolSpec;
use serde_json::{Map, Value};

use super::event::{MalformedReason, ParsedCall, Repair};
use super::normalize::{Outcome, find_tool, object_arguments, unknown};
use super::repair::parse_values;
use super::schema;

const FUNCTION: &str = "<function=";
const PARAMETER: &str = "<parameter=";
const END_PARAMETER: &str = "</parameter>";
const END_FUNCTION: &str = "</function>";

/// Parses a body holding `<function=`; returns the outcome and any text after `</function>`.
pub(crate) fn parse<'a>(body: &'a str, tools: &[ToolSpec]) -> (Outcome, &'a str) {
    let Some(at) = body.find(FUNCTION) else {
        return (Outcome::Failed(MalformedReason::XmlMissingName), "");
    };
    let after = &body[at + FUNCTION.len()..];
    let mut repairs = Vec::new();
    let (name, rest) = match after.find('>') {
        Some(gt) if !after[..gt].contains('\n') => (after[..gt].trim(), &after[gt + 1..]),
        _ => {
            // `<function=read_file\n<parameter=…`: the `>` was lost.
            repairs.push(Repair::MissingCloseTag);
            let nl = after.find('\n').unwrap_or(after.len());
            (after[..nl].trim(), &after[nl..])
        }
    };
    if name.is_empty() {
        return (Outcome::Failed(MalformedReason::XmlMissingName), "");
    }
    let Some((tool, exact)) = find_tool(tools, name) else {
        return (Outcome::Failed(unknown(name, tools)), "");
    };
    if !exact {
        repairs.push(Repair::NameCase);
    }
    let (inner, leftover) = match rest.find(END_FUNCTION) {
        Some(end) => (&rest[..end], &rest[end + END_FUNCTION.len()..]),
        None => {
            repairs.push(Repair::MissingCloseTag);
            (rest, "")
        }
    };
    let args = if inner.trim_start().starts_with(['{', '[']) {
        json_arguments(inner, &mut repairs)
    } else {
        Ok(parameters(inner, tool, &mut repairs))
    };
    let mut args = match args {
        Ok(a) => a,
        Err(reason) => return (Outcome::Failed(reason), leftover),
    };
    if let Err(reason) = schema::validate(tool, &mut args, &mut repairs) {
        return (Outcome::Failed(reason), leftover);
    }
    let call = ParsedCall {
        name: tool.name.clone(),
        arguments: Value::Object(args),
        repairs,
    };
    (Outcome::Calls(vec![call]), leftover)
}

/// `<function=NAME>{"k": …}</function>` (the llama.cpp form).
fn json_arguments(
    inner: &str,
    repairs: &mut Vec<Repair>,
) -> Result<Map<String, Value>, MalformedReason> {
    let values =
        parse_values(inner, 1).map_err(|detail| MalformedReason::InvalidJson { detail })?;
    repairs.extend(values.repairs);
    let first = values.values.into_iter().next().unwrap_or(Value::Null);
    object_arguments(first, repairs).map_err(|found| MalformedReason::ArgumentsNotObject {
        tool: String::new(),
        found,
    })
}

/// Reads every `<parameter=K>` of a function body.
fn parameters(mut inner: &str, tool: &ToolSpec, repairs: &mut Vec<Repair>) -> Map<String, Value> {
    let mut args = Map::new();
    while let Some(at) = inner.find(PARAMETER) {
        let after = &inner[at + PARAMETER.len()..];
        let (key, value_start) = match after.find('>') {
            Some(gt) if !after[..gt].contains('\n') => (after[..gt].trim(), gt + 1),
            _ => {
                // A name missing its `>`: recovered up to the newline if it is declared.
                let nl = after.find('\n').unwrap_or(after.len());
                let key = after[..nl].trim();
                if schema::property(tool, key).is_none() {
                    inner = &after[nl..];
                    continue;
                }
                repairs.push(Repair::MissingCloseTag);
                (key, nl)
            }
        };
        let value_text = &after[value_start..];
        let (end, next) = value_end(value_text);
        let raw = if next == end {
            note(repairs, Repair::MissingCloseTag);
            unclosed_value(&value_text[..end])
        } else {
            closed_value(&value_text[..end])
        };
        let (value, coerced) = schema::coerce_text(schema::property(tool, key), raw);
        if coerced {
            note(repairs, Repair::CoercedType);
        }
        args.insert(key.to_string(), value);
        inner = &value_text[next..];
    }
    args
}

/// Where a value ends and where scanning continues: `</parameter>`, else the next
/// `<parameter=` or the end of the body.
fn value_end(text: &str) -> (usize, usize) {
    let close = text.find(END_PARAMETER);
    let next = text.find(PARAMETER);
    match (close, next) {
        (Some(c), Some(n)) if n < c => (n, n),
        (Some(c), _) => (c, c + END_PARAMETER.len()),
        (None, Some(n)) => (n, n),
        (None, None) => (text.len(), text.len()),
    }
}

/// A value whose `</parameter>` never came ends at the next tag or the end of the body. Its
/// trailing whitespace is the gap before that tag, and a value begun on the tag line
/// (`<parameter=path> a.txt`) loses the spaces after the `>`; one begun on the next line keeps
/// its indentation (code).
fn unclosed_value(s: &str) -> &str {
    let s = s.trim_end().trim_start_matches([' ', '\t']);
    s.strip_prefix('\n').unwrap_or(s)
}

/// A value between its tags, written the template's way (`>\nVALUE\n</parameter>`: one line
/// break on each side is layout) or pretty-printed, with the closer indented on its own line;
/// a one-line value laid out like that loses its indentation too.
fn closed_value(raw: &str) -> &str {
    let s = strip_one_newline(raw);
    match s.rfind('\n') {
        Some(nl) if !s[nl + 1..].is_empty() && s[nl + 1..].trim().is_empty() => {
            let value = &s[..nl];
            if value.trim().contains('\n') {
                value
            } else {
                value.trim()
            }
        }
        _ => s,
    }
}

fn strip_one_newline(s: &str) -> &str {
    let s = s.strip_prefix('\n').unwrap_or(s);
    s.strip_suffix('\n').unwrap_or(s)
}

fn note(repairs: &mut Vec<Repair>, r: Repair) {
    if !repairs.contains(&r) {
        repairs.push(r);
    }
}

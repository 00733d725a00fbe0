//! Shared helpers: typed argument parsing with precise errors, and text capping.

use serde::de::DeserializeOwned;

use super::handler::{Prepared, ToolError};
use super::paths::Resolved;

/// Parses a call's arguments into the tool's typed struct. Errors name the field and what was
/// expected ("at `limit`: invalid type: string \"ten\", expected u32"), so the model can fix
/// the call.
pub fn parse<T: DeserializeOwned>(tool: &str, args: &serde_json::Value) -> Result<T, ToolError> {
    if !args.is_object() {
        return Err(ToolError::Model(format!(
            "{tool}: the arguments must be a JSON object, got {}",
            json_kind(args)
        )));
    }
    serde_path_to_error::deserialize(args).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            ToolError::Model(format!("{tool}: invalid arguments: {inner}"))
        } else {
            ToolError::Model(format!("{tool}: invalid arguments: at `{path}`: {inner}"))
        }
    })
}

fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// The first resolved path of a prepared call (the file a file tool works on).
pub fn target(prepared: &Prepared) -> Result<&Resolved, ToolError> {
    prepared
        .paths
        .first()
        .ok_or_else(|| ToolError::Model("internal: the call was prepared without a path".into()))
}

/// Cuts `line` to `max_chars` characters, saying so.
pub fn cut_line(line: &str, max_chars: usize) -> String {
    match line.char_indices().nth(max_chars) {
        Some((at, _)) => format!("{}… [line cut at {max_chars} characters]", &line[..at]),
        None => line.to_owned(),
    }
}

/// Keeps the head of `text` up to `max_bytes` (at a line end where possible); returns whether
/// it cut.
pub fn cap_head(text: &mut String, max_bytes: usize) -> bool {
    if text.len() <= max_bytes {
        return false;
    }
    let mut at = max_bytes;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    if let Some(nl) = text[..at].rfind('\n') {
        at = nl + 1;
    }
    text.truncate(at);
    true
}

/// How a path is shown in a card title: relative to the cwd when inside it, else absolute.
pub fn short_path(cwd: &std::path::Path, path: &std::path::Path) -> String {
    match path.strip_prefix(cwd) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => path.display().to_string(),
    }
}

/// How a resolved path is shown on a card: as [`short_path`], and when a symlink leads
/// somewhere else, with the file that really is read or changed — the one the user is
/// agreeing to.
pub fn shown_target(cwd: &std::path::Path, target: &super::paths::Resolved) -> String {
    let shown = short_path(cwd, target.path());
    // Where the path would be if no link below the cwd redirected it (the cwd itself may
    // sit behind a link; that is no news to the user).
    let expected = match target.path().strip_prefix(cwd) {
        Ok(rel) => super::paths::real_path(cwd).ok().map(|c| c.join(rel)),
        Err(_) => Some(target.path().to_path_buf()),
    };
    if expected.as_deref() == Some(target.real()) {
        shown
    } else {
        format!("{shown} → {} (through a symlink)", target.real().display())
    }
}

/// A count for messages: "1 match", "3 matches".
pub fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Args {
        path: String,
        limit: Option<u32>,
    }

    #[test]
    fn parse_errors_are_precise() {
        let err = |v: serde_json::Value| match parse::<Args>("t", &v) {
            Err(ToolError::Model(m)) => m,
            other => panic!("{other:?}"),
        };
        let m = err(serde_json::json!({"path": "a", "limit": "ten"}));
        assert!(
            m.contains("at `limit`") && m.contains("expected u32"),
            "{m}"
        );
        let m = err(serde_json::json!({"limit": 3}));
        assert!(m.contains("missing field `path`"), "{m}");
        let m = err(serde_json::json!({"path": "a", "file": "b"}));
        assert!(m.contains("unknown field `file`"), "{m}");
        let m = err(serde_json::json!(["a"]));
        assert!(m.contains("must be a JSON object, got an array"), "{m}");
        assert!(parse::<Args>("t", &serde_json::json!({"path": "a"})).is_ok());
    }

    #[test]
    fn cut_and_cap() {
        assert_eq!(cut_line("héllo", 2), "hé… [line cut at 2 characters]");
        assert_eq!(cut_line("hi", 2), "hi");
        let mut s = "ab\ncd\nef".to_owned();
        assert!(cap_head(&mut s, 7));
        assert_eq!(s, "ab\ncd\n");
        let mut s = "ééé".to_owned();
        assert!(cap_head(&mut s, 3));
        assert_eq!(s, "é");
        let mut s = "short".to_owned();
        assert!(!cap_head(&mut s, 10));
    }
}

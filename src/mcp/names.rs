//! The names MCP tools get in front of the model: `server__tool`, made of `[A-Za-z0-9_-]`
//! only, at most [`MAX_NAME_LEN`] long, and unique within the session's tools.

use std::collections::HashSet;

/// The longest tool name OpenAI-compatible servers accept.
pub const MAX_NAME_LEN: usize = 64;

/// `raw` with every character outside `[A-Za-z0-9_-]` replaced by `_`; `fallback` when empty.
pub fn sanitize(raw: &str, fallback: &str) -> String {
    let clean: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.is_empty() {
        fallback.to_owned()
    } else {
        clean
    }
}

/// Hands out unique `server__tool` names, starting from the names already taken (the
/// built-in tools).
#[derive(Debug, Default)]
pub struct ToolNamer {
    taken: HashSet<String>,
}

impl ToolNamer {
    pub fn new<'a>(taken: impl IntoIterator<Item = &'a str>) -> Self {
        Self {
            taken: taken.into_iter().map(str::to_owned).collect(),
        }
    }

    /// The name for `tool` of `server`. A name already handed out (two servers with the same
    /// name, names that differ only in characters sanitising removes, a cut that makes two
    /// long names equal) gets `_2`, `_3`, … so no tool hides another.
    pub fn name(&mut self, server: &str, tool: &str) -> String {
        let base = format!("{}__{}", sanitize(server, "mcp"), sanitize(tool, "tool"));
        let mut candidate = cut(&base, MAX_NAME_LEN);
        let mut n = 2u32;
        while self.taken.contains(&candidate) {
            let suffix = format!("_{n}");
            candidate = format!("{}{suffix}", cut(&base, MAX_NAME_LEN - suffix.len()));
            n += 1;
        }
        self.taken.insert(candidate.clone());
        candidate
    }
}

/// The first `max` bytes of an ASCII string.
fn cut(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(name: &str) -> bool {
        !name.is_empty()
            && name.len() <= MAX_NAME_LEN
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn sanitises_to_the_allowed_characters() {
        assert_eq!(sanitize("git-hub", "x"), "git-hub");
        assert_eq!(sanitize("my server.v2", "x"), "my_server_v2");
        assert_eq!(sanitize("über/tool", "x"), "_ber_tool");
        assert_eq!(sanitize("", "mcp"), "mcp");
        let mut namer = ToolNamer::default();
        assert_eq!(namer.name("fixture", "echo"), "fixture__echo");
        assert_eq!(namer.name("a b", "c:d"), "a_b__c_d");
        assert_eq!(namer.name("", ""), "mcp__tool");
    }

    #[test]
    fn names_stay_unique_and_short() {
        let mut namer = ToolNamer::new(["read_file", "srv__echo"]);
        assert_eq!(namer.name("srv", "echo"), "srv__echo_2");
        assert_eq!(namer.name("srv", "echo"), "srv__echo_3");
        // Sanitising makes these two equal: the second gets a suffix.
        assert_eq!(namer.name("s", "a.b"), "s__a_b");
        assert_eq!(namer.name("s", "a b"), "s__a_b_2");

        let long = "t".repeat(100);
        let first = namer.name("server", &long);
        let second = namer.name("server", &long);
        let third = namer.name("server", &format!("{long}x"));
        for name in [&first, &second, &third] {
            assert!(valid(name), "{name}");
        }
        assert_eq!(first.len(), MAX_NAME_LEN);
        assert!(first.starts_with("server__ttt"));
        assert!(
            second.ends_with("_2") && third.ends_with("_3"),
            "{second} {third}"
        );
        let all = [first, second, third];
        let unique: HashSet<&String> = all.iter().collect();
        assert_eq!(unique.len(), 3);
    }
}

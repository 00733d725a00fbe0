//! A short worked example for small models (the worked_example assist): one code answer and two
//! tasks done with a call, each answered from its result. Qwen2.5-Coder 0.5B given only the
//! tool list reads or lists files where the task asks it to write one, and answers a command's
//! result by repeating the command.

use std::borrow::Cow;

use crate::config::{Assist, Assists};
use crate::parse::{ResolvedFormat, SESSION_PART};
use crate::tools::COMPACT_WINDOW;

const WORKED_EXAMPLE: &str = include_str!("../../prompts/worked_example.md");

/// `system` with the example after the tool block, for the in-band Hermes format (the example
/// is written in it) and a window small enough to suggest a small model.
pub fn with_worked_example<'a>(
    system: &'a str,
    format: ResolvedFormat,
    window_tokens: u32,
    assists: &Assists,
) -> Cow<'a, str> {
    if !assists.on(Assist::WorkedExample)
        || format != ResolvedFormat::Hermes
        || window_tokens > COMPACT_WINDOW
    {
        return Cow::Borrowed(system);
    }
    let example = WORKED_EXAMPLE.trim_end();
    Cow::Owned(match system.split_once(SESSION_PART) {
        Some((shared, own)) => format!("{shared}{SESSION_PART}{example}\n\n{own}"),
        None => format!("{system}{SESSION_PART}{example}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_follows_the_tool_block_for_hermes_in_a_small_window_only() {
        let system = format!("Be brief.{SESSION_PART}The project is at /p.");
        let on = Assists::default();
        let small = 32 * 1024;
        let held = with_worked_example(&system, ResolvedFormat::Hermes, small, &on);
        let (shared, own) = held.split_once(SESSION_PART).unwrap();
        assert_eq!(shared, "Be brief.");
        assert!(
            own.starts_with("# How to use the tools") && own.ends_with("The project is at /p.")
        );
        assert!(own.contains("\"name\": \"write_file\""));

        let large = 128 * 1024;
        let off = Assists::without([Assist::WorkedExample]);
        for (format, context, assists) in [
            (ResolvedFormat::Native, small, &on),
            (ResolvedFormat::Hermes, large, &on),
            (ResolvedFormat::Hermes, small, &off),
        ] {
            let prompt = with_worked_example(&system, format, context, assists);
            assert_eq!(prompt, system, "{format:?}");
        }
    }
}

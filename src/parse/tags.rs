//! The markup the stream scanner recognises, and prefix matching for holding back partial tags.

use super::block::BlockKind;

pub(crate) const THINK_OPEN: &str = "<think>";
pub(crate) const THINK_CLOSE: &str = "</think>";
pub(crate) const CALL_OPEN: &str = "<tool_call>";
pub(crate) const CALL_CLOSE: &str = "</tool_call>";
pub(crate) const FUNCTION_OPEN: &str = "<function=";
pub(crate) const FUNCTION_CLOSE: &str = "</function>";
pub(crate) const FENCE: &str = "```";

/// Markers after which the model is hallucinating the next turn (docs/qwen-formats.md §4.2): the
/// rest of the output is dropped.
pub(crate) const CUT: [&str; 4] = [
    "<tool_response>",
    "<|im_start|>",
    "<|im_end|>",
    "<|endoftext|>",
];

/// Alternative wrappers some models put calls in, with their closers.
pub(crate) const ALT: [(&str, &str); 7] = [
    ("<tools>", "</tools>"),
    ("<function_call>", "</function_call>"),
    ("<tool>", "</tool>"),
    ("<response>", "</response>"),
    ("<json>", "</json>"),
    ("<xml>", "</xml>"),
    ("<JSON>", "</JSON>"),
];

/// Longest name accepted in `<function=NAME>` before the opener is taken as text.
pub(crate) const MAX_NAME: usize = 128;
/// Longest fence language tag (```` ```json ````) accepted.
pub(crate) const MAX_LANG: usize = 16;
/// Most whitespace looked through after an opener before deciding it is not a call.
pub(crate) const MAX_GAP: usize = 64;

/// How `rest` (starting at a `<`) relates to `tag`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Match {
    Full,
    /// `rest` ends before the tag could be decided: hold it back.
    Partial,
    No,
}

pub(crate) fn match_tag(rest: &[u8], tag: &str) -> Match {
    let t = tag.as_bytes();
    if rest.len() >= t.len() {
        if &rest[..t.len()] == t {
            Match::Full
        } else {
            Match::No
        }
    } else if t.starts_with(rest) {
        Match::Partial
    } else {
        Match::No
    }
}

/// Where a content block ends, by kind.
pub(crate) fn closer(kind: BlockKind, alt_close: &'static str) -> &'static str {
    match kind {
        BlockKind::ToolCall => CALL_CLOSE,
        BlockKind::BareFunction => FUNCTION_CLOSE,
        BlockKind::Alt => alt_close,
        BlockKind::Fence => FENCE,
        BlockKind::BareJson => "",
    }
}

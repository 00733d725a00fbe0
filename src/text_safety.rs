//! Text from untrusted actors (the model, a server, a file) made safe to put on a terminal or
//! in a question to the user. A terminal obeys escape sequences wherever they appear: OSC 52
//! writes the clipboard, OSC 0 retitles the window, CSI 2J clears the screen, a bare CR moves
//! the cursor back so later text overwrites what came before — in a permission question, the
//! part of a command the user should have seen. Bidirectional overrides reorder what is shown
//! ("Trojan source"). Every such character is replaced by a visible spelling; newlines and tabs
//! stay. hearth's own styling is added after this, so it is the only escape that reaches the
//! terminal.

use std::borrow::Cow;

use hearth_conversation::AgentEvent;

/// `text` with every control character except `\n` and `\t`, and every bidirectional
/// formatting character, replaced by a visible spelling: `\e` for ESC, `\r` for CR, `^X` for
/// other C0 controls, `^?` for DEL, `\u{9b}` for C1 controls and bidi formatting.
///
/// A CR directly before a LF stays: it ends a Windows line and cannot overwrite anything.
pub fn visible_controls(text: &str) -> Cow<'_, str> {
    let harmless =
        |c: char, next: Option<char>| !needs_spelling(c) || (c == '\r' && next == Some('\n'));
    let mut chars = text.chars().peekable();
    let mut clean = true;
    while let Some(c) = chars.next() {
        if !harmless(c, chars.peek().copied()) {
            clean = false;
            break;
        }
    }
    if clean {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if harmless(c, chars.peek().copied()) {
            out.push(c);
            continue;
        }
        match c {
            '\u{1b}' => out.push_str("\\e"),
            '\r' => out.push_str("\\r"),
            '\u{7f}' => out.push_str("^?"),
            c if (c as u32) < 0x20 => {
                out.push('^');
                out.push(char::from(b'@' + c as u8));
            }
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// `event` with [`visible_controls`] applied to every string in it (text, titles, tool
/// output, plan entries, paths), for front ends that print events to a terminal. Events
/// without such characters come back unchanged.
pub fn visible_event(event: &AgentEvent) -> Cow<'_, AgentEvent> {
    // Streamed text is most events: check it directly, without a trip through JSON.
    if let AgentEvent::AgentText { text } | AgentEvent::AgentThought { text } = event
        && matches!(visible_controls(text), Cow::Borrowed(_))
    {
        return Cow::Borrowed(event);
    }
    let Ok(mut value) = serde_json::to_value(event) else {
        return Cow::Borrowed(event);
    };
    if !spell_strings(&mut value) {
        return Cow::Borrowed(event);
    }
    match serde_json::from_value(value) {
        Ok(safe) => Cow::Owned(safe),
        // Unreachable for a value we just serialised; never show the raw event instead.
        Err(err) => {
            tracing::debug!("an event did not round-trip after neutralising: {err}");
            Cow::Owned(AgentEvent::Notice {
                text: "(an event with control characters was not shown)".into(),
            })
        }
    }
}

/// Spells out control characters in every string of `value`; returns whether any changed.
fn spell_strings(value: &mut serde_json::Value) -> bool {
    match value {
        serde_json::Value::String(text) => match visible_controls(text) {
            Cow::Borrowed(_) => false,
            Cow::Owned(safe) => {
                *text = safe;
                true
            }
        },
        // Every item is visited: no short-circuit once one has changed.
        serde_json::Value::Array(items) => {
            let mut changed = false;
            for item in items {
                changed |= spell_strings(item);
            }
            changed
        }
        serde_json::Value::Object(map) => {
            let mut changed = false;
            for item in map.values_mut() {
                changed |= spell_strings(item);
            }
            changed
        }
        _ => false,
    }
}

fn needs_spelling(c: char) -> bool {
    match c {
        '\n' | '\t' => false,
        c if c.is_control() => true,
        // Bidi embeddings, overrides and isolates, and the invisible marks that steer them.
        '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_controls_are_spelled_out() {
        let cases = [
            ("plain text\n\tindented", "plain text\n\tindented"),
            ("\u{1b}]52;c;aGVsbG8=\u{7}", "\\e]52;c;aGVsbG8=^G"),
            ("\u{1b}]0;owned\u{7}", "\\e]0;owned^G"),
            ("\u{1b}[2J\u{1b}[H", "\\e[2J\\e[H"),
            ("rm -rf ~\rls", "rm -rf ~\\rls"),
            ("windows\r\nline\r", "windows\r\nline\\r"),
            ("a\u{0}b\u{7f}c", "a^@b^?c"),
            ("csi\u{9b}2J", "csi\\u{9b}2J"),
            ("abc\u{202e}fed", "abc\\u{202e}fed"),
            ("emoji 🦀 and ünïcode", "emoji 🦀 and ünïcode"),
        ];
        for (raw, want) in cases {
            assert_eq!(visible_controls(raw), want, "{raw:?}");
        }
        assert!(matches!(visible_controls("clean"), Cow::Borrowed(_)));
    }

    #[test]
    fn events_are_neutralised_in_every_string() {
        let text = AgentEvent::AgentText {
            text: "hi\u{1b}]52;c;eA==\u{7}".into(),
        };
        match visible_event(&text).as_ref() {
            AgentEvent::AgentText { text } => assert_eq!(text, "hi\\e]52;c;eA==^G"),
            other => panic!("{other:?}"),
        }
        let notice = AgentEvent::Notice {
            text: "clean".into(),
        };
        assert!(matches!(visible_event(&notice), Cow::Borrowed(_)));
    }
}

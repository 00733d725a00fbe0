//! After tool results, small models often lose the question: they call the same tool again,
//! narrate what they would do, or refuse. A request that ends with tool results therefore ends
//! with a one-line reminder of what the user asked (only in the request; the stored history
//! never holds it). The reminder rides at the end of the last tool result's message rather than
//! in a message of its own: chat templates that insist on alternating roles (Gemma's, some of
//! Mistral's) reject two user messages in a row.

use hearth_backend::{ContentPart, Message};
use hearth_conversation::HistoryEntry;

use crate::store::prompt_words;

/// Longest part of the user's request the reminder repeats, in characters: it must stay well
/// inside the budget's safety margin (256 tokens at least), which it is not counted against.
const REMINDER_CHARS: usize = 200;

/// What the user asked, as the turn starts (its last entry is the prompt): the prompt's own
/// words, without the files attached before them, on one line.
pub fn requested_task(history: &[HistoryEntry]) -> Option<String> {
    let Some(HistoryEntry::User { content }) = history.last() else {
        return None;
    };
    let words = prompt_words(content);
    (!words.is_empty()).then(|| words.join(" "))
}

/// The reminder of `asked` for a request built from `history`, when its last entry is a tool
/// result.
pub fn task_reminder(history: &[HistoryEntry], asked: &str) -> Option<String> {
    if !matches!(history.last(), Some(HistoryEntry::ToolResult { .. })) || asked.is_empty() {
        return None;
    }
    let mut quoted: String = asked.chars().take(REMINDER_CHARS).collect();
    if quoted.len() < asked.len() {
        quoted.push('…');
    }
    Some(format!(
        "\n\n(My request was: \"{quoted}\". Answer it from the tool results above; call another \
         tool only if you still need one.)"
    ))
}

/// Adds `reminder` at the end of the request's last message (the tool results).
pub fn append_reminder(messages: &mut [Message], reminder: String) {
    if let Some(last) = messages.last_mut() {
        last.content.push(ContentPart::text(reminder));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> HistoryEntry {
        HistoryEntry::User {
            content: vec![ContentPart::text(text)],
        }
    }

    fn result() -> HistoryEntry {
        HistoryEntry::ToolResult {
            call_id: hearth_conversation::ToolCallId::generate(),
            name: "list_dir".into(),
            output: "a.txt".into(),
            is_error: false,
        }
    }

    #[test]
    fn the_task_is_the_prompts_own_words_without_attached_files() {
        let prompt = HistoryEntry::User {
            content: vec![
                ContentPart::text("<context file=\"a.txt\">\nalpha\n</context>\n\n"),
                ContentPart::text("What is in\n a.txt?"),
            ],
        };
        assert_eq!(
            requested_task(&[prompt]).as_deref(),
            Some("What is in a.txt?")
        );
        assert_eq!(requested_task(&[result()]), None);
        assert_eq!(requested_task(&[user("  ")]), None);
    }

    #[test]
    fn only_after_tool_results_and_bounded() {
        assert!(task_reminder(&[user("hi")], "hi").is_none());
        assert!(task_reminder(&[result()], "").is_none());
        let note = task_reminder(&[user("x"), result()], "Which files are here?").unwrap();
        assert!(note.contains("\"Which files are here?\""), "{note}");
        let long = "x".repeat(1000);
        let note = task_reminder(&[result(), result()], &long).unwrap();
        assert!(note.chars().count() < REMINDER_CHARS + 120);
        let mut messages = vec![Message::user("<tool_response>\na\n</tool_response>")];
        append_reminder(&mut messages, note);
        assert_eq!(messages.len(), 1);
        assert!(messages[0].plain_text().ends_with("you still need one.)"));
    }
}

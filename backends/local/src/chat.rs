//! ChatML rendering of the agent's messages. Tool blocks and in-band tool calls are already
//! rendered into the message text by the agent (Hermes format), so this writes plain ChatML;
//! native `Role::Tool` messages are wrapped the way Qwen's template wraps them.

use hearth_backend::{Message, Role};

/// The generation prompt that opens the assistant's turn.
pub const GENERATION_PROMPT: &str = "<|im_start|>assistant\n";

/// Renders `messages` as ChatML ending with the generation prompt. `default_system` is added
/// first when the conversation has no system message.
pub fn render_chatml(messages: &[Message], default_system: Option<&str>) -> String {
    let mut out = String::new();
    if let Some(system) = default_system
        && messages.first().map(|m| m.role) != Some(Role::System)
    {
        push_turn(&mut out, "system", system);
    }
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        match m.role {
            Role::System => push_turn(&mut out, "system", &m.plain_text()),
            Role::User => push_turn(&mut out, "user", &m.plain_text()),
            Role::Assistant => push_turn(&mut out, "assistant", &m.plain_text()),
            Role::Tool => {
                // Consecutive tool results share one user turn.
                let mut body = String::new();
                while i < messages.len() && messages[i].role == Role::Tool {
                    if !body.is_empty() {
                        body.push('\n');
                    }
                    body.push_str("<tool_response>\n");
                    body.push_str(&messages[i].plain_text());
                    body.push_str("\n</tool_response>");
                    i += 1;
                }
                push_turn(&mut out, "user", &body);
                continue;
            }
        }
        i += 1;
    }
    out.push_str(GENERATION_PROMPT);
    out
}

fn push_turn(out: &mut String, role: &str, text: &str) {
    out.push_str("<|im_start|>");
    out.push_str(role);
    out.push('\n');
    out.push_str(text);
    out.push_str("<|im_end|>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_chatml_with_default_system_and_generation_prompt() {
        let msgs = [
            Message::user("hi"),
            Message::assistant("hello"),
            Message::user("2+2?"),
        ];
        let text = render_chatml(&msgs, Some("SYS"));
        assert_eq!(
            text,
            "<|im_start|>system\nSYS<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n\
             <|im_start|>assistant\nhello<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n\
             <|im_start|>assistant\n"
        );
    }

    #[test]
    fn own_system_message_replaces_the_default_and_tool_results_merge() {
        let tool = |t: &str| Message::text(Role::Tool, t);
        let msgs = [
            Message::system("S"),
            Message::user("u"),
            tool("a"),
            tool("b"),
        ];
        let text = render_chatml(&msgs, Some("DEFAULT"));
        assert!(!text.contains("DEFAULT"));
        assert!(text.contains(
            "<|im_start|>user\n<tool_response>\na\n</tool_response>\n<tool_response>\nb\n</tool_response><|im_end|>\n"
        ));
        assert!(text.ends_with(GENERATION_PROMPT));
    }
}

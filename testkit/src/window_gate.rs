//! A strict server's context limit, as vLLM enforces it: the prompt is counted with the server's
//! own tokenizer after its chat template, and a request whose prompt plus `max_tokens` exceeds
//! the window is rejected with vLLM's message (which states both counts). An accepted request's
//! `usage.prompt_tokens` is that count, as a real server reports it.

use std::sync::Arc;

use serde_json::Value;

use crate::reply::{Reply, Step};

/// Counts the tokens of one piece of text, as the server's tokenizer would.
pub type TextCounter = Arc<dyn Fn(&str) -> u32 + Send + Sync>;

/// Tokens the chat template adds around each message (`<|im_start|>role\n` … `<|im_end|>\n`).
pub const TEMPLATE_TOKENS_PER_MESSAGE: u32 = 5;

/// What the template writes before the tool list when tools are offered; counted with the
/// server's tokenizer, so each counter prices it its own way.
const TOOLS_PREAMBLE: &str = "\n\n# Tools\n\nYou can call the functions below to help with \
the request. Their signatures are given inside <tools></tools> XML tags:\n<tools>\n</tools>\n\n\
For every call, return a JSON object with the function name and its arguments inside \
<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": \
<args-json-object>}\n</tool_call>";

/// The limit one [`crate::FakeServer`] enforces.
#[derive(Clone)]
pub struct WindowGate {
    /// The model's window (vLLM's `max_model_len`).
    pub window: u32,
    /// The server's tokenizer.
    pub counter: TextCounter,
}

impl WindowGate {
    /// A gate with `window` tokens counting with [`bpe_like_tokens`].
    pub fn new(window: u32) -> WindowGate {
        WindowGate {
            window,
            counter: Arc::new(bpe_like_tokens),
        }
    }

    /// The same gate counting with `counter`.
    pub fn counting_with(mut self, counter: TextCounter) -> WindowGate {
        self.counter = counter;
        self
    }

    /// The prompt's size in the server's tokens: every message's text, tool calls and tool
    /// results as the template renders them, the tool list with its preamble, and the
    /// template's tokens per message.
    pub fn prompt_tokens(&self, body: &Value) -> u32 {
        let count = |text: &str| (self.counter)(text);
        let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
        let mut total = 0u32;
        for message in messages {
            total += TEMPLATE_TOKENS_PER_MESSAGE;
            total += count(&message_text(&message["content"]));
            for call in message["tool_calls"].as_array().into_iter().flatten() {
                let rendered = format!(
                    "<tool_call>\n{{\"name\": \"{}\", \"arguments\": {}}}\n</tool_call>",
                    call["function"]["name"].as_str().unwrap_or_default(),
                    call["function"]["arguments"].as_str().unwrap_or("{}")
                );
                total += count(&rendered);
            }
            if message["role"] == "tool" {
                total += count("<tool_response>\n\n</tool_response>");
            }
        }
        if let Some(tools) = body["tools"].as_array().filter(|t| !t.is_empty()) {
            total += count(TOOLS_PREAMBLE);
            total += tools.iter().map(|t| count(&t.to_string()) + 1).sum::<u32>();
        }
        total
    }

    /// The rejection for a prompt of `prompt` tokens when `completion` are asked for, or
    /// `None` when the request fits.
    pub fn check(&self, prompt: u32, completion: u32) -> Option<Reply> {
        let requested = prompt + completion;
        (requested > self.window).then(|| {
            let message = format!(
                "This model's maximum context length is {} tokens. However, you requested \
                 {requested} tokens ({prompt} in the messages, {completion} in the completion). \
                 Please reduce the length of the messages or completion.",
                self.window
            );
            let body = serde_json::json!({
                "object": "error",
                "message": message,
                "type": "BadRequestError",
                "param": null,
                "code": 400
            });
            Reply::Status {
                code: 400,
                headers: Vec::new(),
                body: body.to_string(),
            }
        })
    }
}

fn message_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// `reply` with every usage chunk's `prompt_tokens` set to `prompt` (and `total_tokens` to
/// match), as the server that counted the prompt would report it.
pub fn with_prompt_tokens(reply: Reply, prompt: u32) -> Reply {
    let rewrite = |steps: Vec<Step>| -> Vec<Step> {
        steps
            .into_iter()
            .map(|step| match step {
                Step::Bytes(bytes) => Step::Bytes(rewrite_usage(&bytes, prompt)),
                other => other,
            })
            .collect()
    };
    match reply {
        Reply::Sse(steps) => Reply::Sse(rewrite(steps)),
        Reply::SseUntilClose(steps) => Reply::SseUntilClose(rewrite(steps)),
        Reply::Delayed { delay, reply } => Reply::Delayed {
            delay,
            reply: Box::new(with_prompt_tokens(*reply, prompt)),
        },
        other => other,
    }
}

/// One SSE frame (`data: {...}\n\n`) with its usage's prompt count replaced; anything else
/// unchanged.
fn rewrite_usage(bytes: &[u8], prompt: u32) -> Vec<u8> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return bytes.to_vec();
    };
    let Some(payload) = text.strip_prefix("data: ").map(str::trim_end) else {
        return bytes.to_vec();
    };
    let Ok(mut chunk) = serde_json::from_str::<Value>(payload) else {
        return bytes.to_vec();
    };
    let Some(usage) = chunk.get_mut("usage").filter(|u| u.is_object()) else {
        return bytes.to_vec();
    };
    let completion = usage["completion_tokens"].as_u64().unwrap_or(0);
    usage["prompt_tokens"] = prompt.into();
    usage["total_tokens"] = (u64::from(prompt) + completion).into();
    format!("data: {chunk}\n\n").into_bytes()
}

/// A stand-in for the tokenizer of a model with a small vocabulary (Llama 2 and Mistral have
/// 32k entries, Qwen 152k), which prices text the way such a tokenizer does in shape, not in
/// detail: the text is split as Qwen's pre-tokenizer splits it (a run of ASCII letters with the
/// one blank or mark before it, each digit alone, runs of punctuation, of blanks and of line
/// breaks); a run of letters or blanks costs a token per four characters or part of them, a run
/// of punctuation one per two, a line break one; a non-ASCII character costs two (byte
/// fallback). Prose, code, numbers and CJK text cost different amounts per character, some more
/// than one token per character, and no linear rule over character classes matches it exactly.
pub fn bpe_like_tokens(text: &str) -> u32 {
    #[derive(PartialEq, Clone, Copy)]
    enum Class {
        Letter,
        Single,
        Wide,
        Blank,
        Newline,
        Mark,
    }
    let class = |c: char| {
        if c.is_ascii_alphabetic() {
            Class::Letter
        } else if !c.is_ascii() {
            Class::Wide
        } else if c.is_ascii_digit() {
            Class::Single
        } else if c == '\n' || c == '\r' {
            Class::Newline
        } else if c.is_ascii_whitespace() {
            Class::Blank
        } else {
            Class::Mark
        }
    };
    let cost = |(class, chars): (Class, u32)| match class {
        Class::Letter | Class::Blank => chars.div_ceil(4),
        Class::Mark => chars.div_ceil(2),
        Class::Newline | Class::Single => chars,
        Class::Wide => 2 * chars,
    };
    let mut tokens = 0u32;
    let mut run: Option<(Class, u32)> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let mut kind = class(c);
        // A blank or mark right before a letter run joins it (" word", ".field").
        if matches!(kind, Class::Blank | Class::Mark)
            && chars.peek().is_some_and(|&n| class(n) == Class::Letter)
        {
            if let Some(piece) = run.take() {
                tokens += cost(piece);
            }
            kind = Class::Letter;
        }
        run = match run {
            Some((current, len)) if current == kind => Some((current, len + 1)),
            previous => {
                if let Some(piece) = previous {
                    tokens += cost(piece);
                }
                Some((kind, 1))
            }
        };
    }
    if let Some(piece) = run {
        tokens += cost(piece);
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_kinds_of_text_differently() {
        assert_eq!(bpe_like_tokens(""), 0);
        assert_eq!(bpe_like_tokens("hello world"), 4);
        assert_eq!(bpe_like_tokens("2026"), 4);
        // "fn", " main", "()", " ", "{}"
        assert_eq!(bpe_like_tokens("fn main() {}"), 6);
        let prose = "the quick brown fox jumps over the lazy dog ".repeat(20);
        let code = "    let x_1 = foo(&bar[2..]);\n".repeat(20);
        let per_char = |t: &str| f64::from(bpe_like_tokens(t)) / t.chars().count() as f64;
        assert!(per_char(&code) > 1.5 * per_char(&prose));
        assert_eq!(bpe_like_tokens("日本語"), 6);
    }

    #[test]
    fn rejects_over_the_window_with_vllms_message() {
        let gate = WindowGate::new(4096);
        assert!(gate.check(3000, 1096).is_none());
        let Some(Reply::Status { code, body, .. }) = gate.check(3500, 1024) else {
            panic!("expected a rejection");
        };
        assert_eq!(code, 400);
        assert!(body.contains("maximum context length is 4096 tokens"));
        assert!(body.contains("(3500 in the messages, 1024 in the completion)"));
    }

    #[test]
    fn usage_gets_the_servers_count() {
        let reply = with_prompt_tokens(Reply::text(&["hi"]), 777);
        let Reply::Sse(steps) = reply else {
            panic!("sse expected")
        };
        let text: String = steps
            .iter()
            .filter_map(|s| match s {
                Step::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
                _ => None,
            })
            .collect();
        assert!(text.contains("\"prompt_tokens\":777"), "{text}");
        assert!(text.contains("\"total_tokens\":778"), "{text}");
    }
}

//! What a server says about a prompt it rejected as too long: its size in the server's own
//! tokens, and the window. vLLM, llama.cpp and OpenAI state both; the agent learns its
//! estimate from them, so that the retry fits and the next rounds do too.

use serde_json::Value;

/// The prompt's size and the window a rejection states; `None` for what it does not say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct StatedCounts {
    pub prompt_tokens: Option<u32>,
    pub window: Option<u32>,
}

/// Phrases after which a server writes the prompt's size:
/// vLLM "(4000 in the messages, …)", "your request has 5000 input tokens", "your prompt contains
/// at least 4097 input tokens"; OpenAI "your messages resulted in 9000 tokens".
const PROMPT_BEFORE: [&str; 2] = [" in the messages", " input tokens"];
const PROMPT_AFTER: [&str; 1] = ["messages resulted in "];

/// Phrases after which a server writes its window: vLLM and OpenAI "maximum context length is
/// 4096 tokens", LM Studio "context length of only 4096 tokens".
const WINDOW_AFTER: [&str; 2] = ["maximum context length is ", "context length of only "];

/// Reads the counts from an error body: llama.cpp's `n_prompt_tokens` and `n_ctx` fields
/// where present, else the numbers in the message's words.
pub(crate) fn stated_counts(body: &str) -> StatedCounts {
    let parsed = serde_json::from_str::<Value>(body).ok();
    let field = |name: &str| {
        let error = parsed.as_ref()?;
        let error = error.get("error").unwrap_or(error);
        error
            .get(name)
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
    };
    let text = body.to_ascii_lowercase();
    StatedCounts {
        prompt_tokens: field("n_prompt_tokens").or_else(|| {
            PROMPT_AFTER
                .iter()
                .find_map(|m| number_after(&text, m))
                .or_else(|| PROMPT_BEFORE.iter().find_map(|m| number_before(&text, m)))
        }),
        window: field("n_ctx").or_else(|| WINDOW_AFTER.iter().find_map(|m| number_after(&text, m))),
    }
    .positive()
}

impl StatedCounts {
    fn positive(self) -> Self {
        Self {
            prompt_tokens: self.prompt_tokens.filter(|n| *n > 0),
            window: self.window.filter(|n| *n > 0),
        }
    }
}

/// The number that follows the first `marker` in `text`.
fn number_after(text: &str, marker: &str) -> Option<u32> {
    let rest = &text[text.find(marker)? + marker.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The number that ends right before the first `marker` in `text`.
fn number_before(text: &str, marker: &str) -> Option<u32> {
    let head = &text[..text.find(marker)?];
    let start = head
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    head[start..].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(prompt: Option<u32>, window: Option<u32>) -> StatedCounts {
        StatedCounts {
            prompt_tokens: prompt,
            window,
        }
    }

    #[test]
    fn each_servers_wording_gives_its_numbers() {
        let cases = [
            (
                r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","code":400}"#,
                counts(Some(4000), Some(4096)),
            ),
            (
                "This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens. Please reduce the length of the input messages.",
                counts(Some(5000), Some(4096)),
            ),
            (
                "This model's maximum context length is 4096 tokens. However, you requested 1000 output tokens and your prompt contains at least 3097 input tokens, for a total of at least 4097 tokens.",
                counts(Some(3097), Some(4096)),
            ),
            (
                r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
                counts(Some(9000), Some(8192)),
            ),
            (
                r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}"#,
                counts(Some(5000), Some(4096)),
            ),
            (
                r#"{"error":"input length exceeds the context length"}"#,
                counts(None, None),
            ),
        ];
        for (body, expected) in cases {
            assert_eq!(stated_counts(body), expected, "{body}");
        }
    }

    #[test]
    fn junk_numbers_are_no_counts() {
        assert_eq!(
            stated_counts("maximum context length is many tokens; 0 input tokens"),
            StatedCounts::default()
        );
        assert_eq!(
            stated_counts("maximum context length is 99999999999999 tokens").window,
            None
        );
    }
}

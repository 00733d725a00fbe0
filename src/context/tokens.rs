//! Token accounting: what a piece of text, a history entry and the window's budget cost.
//!
//! Counting is done per piece (text, reasoning, call, result) plus a fixed per-message
//! overhead for the chat template's role markers. Counting pieces apart never merges tokens
//! across piece boundaries, so it errs on the high side of counting the rendered prompt whole.

use std::path::Path;

use hearth_backend::ContentPart;
use hearth_conversation::HistoryEntry;

use super::error::ContextError;

/// Tokens one image is assumed to cost when the counter cannot see its size.
///
/// Qwen2-VL/Qwen2.5-VL cut an image into 14-pixel patches and merge 2×2 of them into one token,
/// so one token covers 28×28 pixels: a 1000×1000 screenshot is 36×36 ≈ 1,296 tokens. Servers
/// resize larger images down to their pixel cap, so 1,296 is stated as the cost of a typical
/// screenshot rather than a bound; the calibration absorbs the difference once usage returns.
pub const DEFAULT_IMAGE_TOKENS: usize = 1296;

/// Template tokens around one message (`<|im_start|>role\n` … `<|im_end|>\n` in ChatML is 5).
pub const MESSAGE_OVERHEAD: usize = 6;

/// Extra tokens around one tool call (`<tool_call>\n{"name": …, "arguments": …}\n</tool_call>`).
const CALL_OVERHEAD: usize = 16;

/// Extra tokens around one tool result (`<tool_response>\n…\n</tool_response>`).
const RESULT_OVERHEAD: usize = 8;

/// Counts tokens the way the model will see them.
pub trait TokenCounter: Send + Sync {
    /// Tokens `text` costs.
    fn count(&self, text: &str) -> usize;

    /// Tokens one image costs.
    fn image_tokens(&self) -> usize {
        DEFAULT_IMAGE_TOKENS
    }

    /// Template tokens around each message.
    fn message_overhead(&self) -> usize {
        MESSAGE_OVERHEAD
    }
}

/// The exact count: the model's own tokenizer, loaded from its `tokenizer.json`.
pub struct TokenizerCounter {
    tokenizer: tokenizers::Tokenizer,
    image_tokens: usize,
}

impl TokenizerCounter {
    /// Loads `tokenizer.json` from `path`.
    pub fn from_file(path: &Path) -> Result<Self, ContextError> {
        let tokenizer =
            tokenizers::Tokenizer::from_file(path).map_err(|e| ContextError::Tokenizer {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?;
        Ok(Self::new(tokenizer))
    }

    /// Wraps a tokenizer already loaded (the local engine's).
    pub fn new(tokenizer: tokenizers::Tokenizer) -> Self {
        Self {
            tokenizer,
            image_tokens: DEFAULT_IMAGE_TOKENS,
        }
    }
}

impl TokenCounter for TokenizerCounter {
    fn count(&self, text: &str) -> usize {
        match self.tokenizer.encode_fast(text, false) {
            Ok(encoding) => encoding.len(),
            Err(err) => {
                // An encode failure is not expected for UTF-8 input; fall back to the most
                // pessimistic count (one token per byte) rather than under-count.
                tracing::debug!("tokenizer failed, counting bytes: {err}");
                text.len()
            }
        }
    }

    fn image_tokens(&self) -> usize {
        self.image_tokens
    }
}

/// The token budget of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// The model's context window in tokens.
    pub window: u32,
    /// Tokens reserved for the answer (`max_tokens` of the request).
    pub max_tokens: u32,
    /// Safety margin for counting error.
    pub margin: u32,
}

impl Budget {
    /// A budget with the default margin: 1/32 of the window, at least 256 tokens.
    pub fn new(window: u32, max_tokens: u32) -> Self {
        Self {
            window,
            max_tokens,
            margin: (window / 32).max(256),
        }
    }

    /// Tokens the prompt may take: window − max_tokens − margin (zero if those exceed it).
    pub fn available(&self) -> usize {
        self.window
            .saturating_sub(self.max_tokens)
            .saturating_sub(self.margin) as usize
    }

    /// The same budget with `tokens` less for the prompt, for a retry after the server
    /// rejected a prompt as too long (its count differs from ours).
    pub fn tightened(&self, tokens: u32) -> Self {
        Self {
            margin: self.margin.saturating_add(tokens),
            ..*self
        }
    }
}

/// Tokens `entry` costs, as the model will see it.
pub fn entry_tokens(entry: &HistoryEntry, counter: &dyn TokenCounter) -> usize {
    let overhead = counter.message_overhead();
    match entry {
        HistoryEntry::User { content } => overhead + content_tokens(content, counter),
        HistoryEntry::Assistant {
            text,
            reasoning,
            tool_calls,
        } => {
            let mut tokens = overhead + counter.count(text);
            if let Some(reasoning) = reasoning {
                // `<think>\n…\n</think>\n\n` around it.
                tokens += counter.count(reasoning) + 4;
            }
            for call in tool_calls {
                tokens += CALL_OVERHEAD
                    + counter.count(&call.name)
                    + counter.count(&call.arguments.to_string());
            }
            tokens
        }
        HistoryEntry::ToolResult { name, output, .. } => {
            overhead + RESULT_OVERHEAD + counter.count(name) + counter.count(output)
        }
    }
}

/// Tokens of a user message's parts.
pub fn content_tokens(content: &[ContentPart], counter: &dyn TokenCounter) -> usize {
    content
        .iter()
        .map(|part| match part {
            ContentPart::Text { text } => counter.count(text),
            ContentPart::Image { .. } => counter.image_tokens(),
        })
        .sum()
}

/// Tokens of a whole history.
pub fn history_tokens(history: &[HistoryEntry], counter: &dyn TokenCounter) -> usize {
    history.iter().map(|e| entry_tokens(e, counter)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_conversation::{ToolCallId, ToolCallRecord};

    struct CharCounter;
    impl TokenCounter for CharCounter {
        fn count(&self, text: &str) -> usize {
            text.chars().count()
        }
    }

    #[test]
    fn budget_subtracts_answer_and_margin_and_never_underflows() {
        let budget = Budget::new(32_768, 4096);
        assert_eq!(budget.margin, 1024);
        assert_eq!(budget.available(), 32_768 - 4096 - 1024);
        assert_eq!(Budget::new(1000, 2000).available(), 0);
        assert_eq!(budget.tightened(1000).available(), 32_768 - 4096 - 2024);
        assert_eq!(Budget::new(4096, 512).margin, 256);
    }

    #[test]
    fn entry_tokens_counts_every_piece() {
        let c = CharCounter;
        let user = HistoryEntry::User {
            content: vec![
                ContentPart::text("abcd"),
                ContentPart::Image {
                    mime_type: "image/png".into(),
                    data: "xx".into(),
                },
            ],
        };
        assert_eq!(entry_tokens(&user, &c), MESSAGE_OVERHEAD + 4 + 1296);
        let assistant = HistoryEntry::Assistant {
            text: "hi".into(),
            reasoning: Some("why".into()),
            tool_calls: vec![ToolCallRecord {
                id: ToolCallId::new("c1"),
                name: "ls".into(),
                arguments: serde_json::json!({"p": 1}),
            }],
        };
        assert_eq!(
            entry_tokens(&assistant, &c),
            MESSAGE_OVERHEAD + 2 + 3 + 4 + CALL_OVERHEAD + 2 + 7
        );
        let result = HistoryEntry::ToolResult {
            call_id: ToolCallId::new("c1"),
            name: "ls".into(),
            output: "12345".into(),
            is_error: false,
        };
        assert_eq!(
            entry_tokens(&result, &c),
            MESSAGE_OVERHEAD + RESULT_OVERHEAD + 2 + 5
        );
        assert_eq!(
            history_tokens(&[user.clone(), result.clone()], &c),
            entry_tokens(&user, &c) + entry_tokens(&result, &c)
        );
    }
}

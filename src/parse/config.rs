//! Parser configuration and the resolution of `tool_format = "auto"`.

use hearth_backend::ToolSpec;

use super::ToolFormat;

/// What a [`crate::parse::StreamParser`] needs to know about the request.
#[derive(Debug, Clone, Default)]
pub struct ParserConfig {
    /// `Auto`, `Hermes` and `Xml` all parse both in-band formats (models drift between them).
    /// `Native` parses them too: calls should arrive as `tool_calls`, but a server whose
    /// template missed one (llama.cpp returning the call as JSON text in `content`) must not
    /// have it shown as the answer.
    pub format: ToolFormat,
    /// The declared tools: calls to anything else are never executed.
    pub tools: Vec<ToolSpec>,
    /// Whether the prompt ended inside `<think>`.
    pub think: ThinkStart,
    /// What call-shaped JSON written as text is.
    pub text_calls: TextCalls,
}

/// What to make of a call written as a JSON object in the text (`{"name": …, "arguments": …}`)
/// rather than in `<tool_call>` tags. Small models do this all the time: they invent a tool
/// (`write_fizzbuzz`) instead of answering, or say "use read_file as follows:" and write the
/// call they mean to make.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TextCalls {
    /// Opening the message (bare or fenced): a call, and one naming no declared tool is a
    /// malformed call (the model is told the real tools, and to answer in text if none fits).
    /// After prose, in a message that made no other call: a call when it names a declared
    /// tool and has exactly a call's keys.
    #[default]
    Take,
    /// Only the classic forms: a bare or fenced object opening the message that names a
    /// declared tool; anything else is plain text.
    Show,
}

/// Where the output starts relative to a think block.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ThinkStart {
    /// The model opens `<think>` itself, if at all.
    #[default]
    Closed,
    /// The prompt ended inside `<think>` (QwQ, Qwen3 Thinking-2507, Qwen3.5): only `</think>`
    /// will appear.
    Open,
}

/// A concrete tool format, after `auto` was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResolvedFormat {
    /// Hermes JSON in `<tool_call>`.
    Hermes,
    /// Qwen3-Coder XML `<function=NAME><parameter=K>`.
    Xml,
    /// OpenAI `tools` / `tool_calls`.
    Native,
}

/// Decides the format for a model: `auto` picks XML for Qwen3-Coder and Qwen3.5/3.6 (which use
/// the Coder parser upstream), Hermes otherwise.
pub fn resolve_format(format: ToolFormat, model: &str) -> ResolvedFormat {
    match format {
        ToolFormat::Hermes => ResolvedFormat::Hermes,
        ToolFormat::Xml => ResolvedFormat::Xml,
        ToolFormat::Native => ResolvedFormat::Native,
        ToolFormat::Auto => {
            let m = model.to_ascii_lowercase();
            let xml = m.contains("qwen3-coder")
                || m.contains("qwen3_coder")
                || m.contains("qwen3coder")
                || m.contains("qwen3.5")
                || m.contains("qwen3.6");
            if xml {
                ResolvedFormat::Xml
            } else {
                ResolvedFormat::Hermes
            }
        }
    }
}

/// The think start a model family uses: QwQ, the Thinking-2507 models, Qwen3-Next-Thinking,
/// Qwen3.5/3.6 and DeepSeek-R1 distills pre-fill `<think>` in their template, so their output
/// carries only `</think>` (docs/qwen-formats.md §3). Everything else opens its own block, if any.
/// A server run with thinking disabled pre-fills a closed block instead: configure `Closed` then.
pub fn think_start_for(model: &str) -> ThinkStart {
    let m = model.to_ascii_lowercase();
    let open = m.contains("qwq")
        || m.contains("thinking")
        || m.contains("qwen3.5")
        || m.contains("qwen3.6")
        || m.contains("deepseek-r1");
    if open {
        ThinkStart::Open
    } else {
        ThinkStart::Closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_picks_by_model_name() {
        let r = |m| resolve_format(ToolFormat::Auto, m);
        assert_eq!(r("Qwen/Qwen3-Coder-30B-A3B-Instruct"), ResolvedFormat::Xml);
        assert_eq!(r("qwen3-coder:30b"), ResolvedFormat::Xml);
        assert_eq!(r("Qwen3.6-35B-A3B"), ResolvedFormat::Xml);
        assert_eq!(r("Qwen/Qwen3-8B"), ResolvedFormat::Hermes);
        assert_eq!(r("qwen2.5-coder:7b"), ResolvedFormat::Hermes);
        assert_eq!(
            resolve_format(ToolFormat::Native, "qwen3-coder"),
            ResolvedFormat::Native
        );
        assert_eq!(
            resolve_format(ToolFormat::Hermes, "qwen3-coder"),
            ResolvedFormat::Hermes
        );
    }
}

//! What a backend knows about one of its models: the context window and where that figure came
//! from, which server answers, and whether its token counts are exact. Each backend finds this
//! out in its own dialect (llama.cpp `/props`, vLLM `max_model_len`, LM Studio, Ollama
//! `/api/show`, the engine's own header); the agent only reads the answer.

/// Which server answers an endpoint, as far as its backend could tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerKind {
    LlamaCpp,
    Vllm,
    LmStudio,
    /// Ollama uses its own small default context unless each request asks for the window; its
    /// backend sends such requests through Ollama's native chat.
    Ollama,
    /// hearth's own in-process engine.
    Engine,
    /// Another server, or one that answered no probe.
    Unknown,
}

/// Where a model's context window came from, most trusted first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowSource {
    /// `context_window` in the endpoint's configuration (set by the agent, never a backend).
    Config,
    /// llama.cpp `/props` `n_ctx`.
    LlamaCpp,
    /// vLLM `/v1/models` `max_model_len`.
    Vllm,
    /// LM Studio's loaded (or maximum) context length.
    LmStudio,
    /// Ollama: the loaded model's context (`/api/ps`), else its `num_ctx` (`/api/show`), else its
    /// trained length, capped.
    Ollama,
    /// What the backend's model list says (another server's `context_length`, or the engine's
    /// own window).
    Listed,
    /// Nothing reported a window; the agent assumes a small default (set by the agent).
    Default,
}

/// One model as its backend describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelDescription {
    /// The context window the server or engine reports, in tokens, and where it came from.
    pub window: Option<(u32, WindowSource)>,
    pub server: ServerKind,
    /// Whether [`crate::Backend::count_tokens`] gives this model's exact counts (the backend
    /// has its tokenizer). When not, the agent estimates and learns from reported usage.
    pub exact_token_counts: bool,
    /// Whether the answer stays true for the life of the process. An engine that has not
    /// loaded its model yet knows no window: callers ask again next time instead of keeping it.
    pub settled: bool,
    /// Whether the model's chat template leaves each answer inside `<think>` (its generation
    /// prompt ends with the opener, as QwQ's and DeepSeek-R1's do), so the output carries only
    /// `</think>`; `None` when the backend cannot tell (see [`template_opens_reasoning`]).
    pub opens_in_reasoning: Option<bool>,
}

impl ModelDescription {
    /// A model nothing is known about, on an unrecognised server.
    pub fn unknown() -> Self {
        Self {
            window: None,
            server: ServerKind::Unknown,
            exact_token_counts: false,
            settled: true,
            opens_in_reasoning: None,
        }
    }
}

/// Whether a Jinja chat template's generation prompt (what follows its last
/// `add_generation_prompt`) can open `<think>` without closing it. Qwen3's hybrid template
/// writes `<think>\n\n</think>` there only when thinking is off, so a closed pair is no
/// opener; QwQ, R1 distills and Qwen3.5 end it with `<think>\n`.
pub fn template_opens_reasoning(template: &str) -> bool {
    let Some(at) = template.rfind("add_generation_prompt") else {
        return false;
    };
    let branch = &template[at..];
    branch.match_indices("<think>").any(|(i, open)| {
        let mut after = &branch[i + open.len()..];
        // Skip the whitespace a template writes between the tags: real or `\n` escapes.
        loop {
            let trimmed = after.trim_start().trim_start_matches("\\n");
            if trimmed.len() == after.len() {
                break;
            }
            after = trimmed;
        }
        !after.starts_with("</think>")
    })
}

#[cfg(test)]
mod reasoning_tests {
    use super::template_opens_reasoning;

    #[test]
    fn a_generation_prompt_that_opens_think_is_recognised() {
        let qwq = "{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n<think>\\n' }}\n{%- endif %}";
        let r1 = "{% if add_generation_prompt %}{{'<｜Assistant｜><think>\\n'}}{% endif %}";
        let qwen3 = "{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n' }}\n    {%- if enable_thinking is defined and enable_thinking is false %}\n        {{- '<think>\\n\\n</think>\\n\\n' }}\n    {%- endif %}\n{%- endif %}";
        let qwen25 = "{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n' }}\n{%- endif %}\n";
        let history_only = "{%- if '<think>' in content %}{%- endif %}";
        let qwen35 = "{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n' }}\n    {%- if enable_thinking is defined and enable_thinking is false %}\n        {{- '<think>\\n\\n</think>\\n\\n' }}\n    {%- else %}\n        {{- '<think>\\n' }}\n    {%- endif %}\n{%- endif %}";
        assert!(template_opens_reasoning(qwen35));
        assert!(template_opens_reasoning(qwq));
        assert!(template_opens_reasoning(r1));
        assert!(!template_opens_reasoning(qwen3));
        assert!(!template_opens_reasoning(qwen25));
        assert!(!template_opens_reasoning(history_only));
    }
}

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
}

impl ModelDescription {
    /// A model nothing is known about, on an unrecognised server.
    pub fn unknown() -> Self {
        Self {
            window: None,
            server: ServerKind::Unknown,
            exact_token_counts: false,
            settled: true,
        }
    }
}

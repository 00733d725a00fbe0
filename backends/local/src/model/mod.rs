//! Models as hearth's own code on candle ops: config, KV cache, RoPE, the decoder stack and
//! the GGUF and safetensors loaders.

mod config;
mod cpu_attention;
mod cpu_memory;
mod cpu_mlp;
mod cpu_norm;
mod cpu_rope;
mod disk_rows;
mod files;
mod gguf;
mod gguf_check;
mod gguf_types;
mod kv_cache;
mod kv_layout;
mod linear;
mod rope;
pub mod safetensors;
mod stacked;
mod transformer;

pub use config::{Arch, ModelConfig};
pub use files::{ModelFiles, ModelHeader};
pub(crate) use gguf::quantization_label;
pub use gguf::{GgufFile, LoadStage};
pub use kv_cache::{KvCache, kv_dtype};
pub use linear::Kernels;
pub use rope::Rope;
pub use transformer::Model;

#[cfg(test)]
#[path = "safetensors_tests.rs"]
mod safetensors_tests;
#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;
#[cfg(test)]
pub(crate) mod tiny;

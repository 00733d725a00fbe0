//! Model hyper-parameters read from GGUF metadata.

use std::collections::HashMap;

use candle_core::quantized::gguf_file::{Content, Value};

use crate::error::EngineError;

/// The architectures this engine runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// Qwen2 / Qwen2.5: q/k/v biases, NeoX RoPE.
    Qwen2,
    /// Qwen3 dense: per-head RMS norm on q and k, no biases, NeoX RoPE.
    Qwen3,
    /// Llama (SmolLM2, TinyLlama): llama.cpp stores q/k permuted for interleaved RoPE.
    Llama,
}

impl Arch {
    /// The GGUF `general.architecture` value.
    pub fn gguf_name(self) -> &'static str {
        match self {
            Self::Qwen2 => "qwen2",
            Self::Qwen3 => "qwen3",
            Self::Llama => "llama",
        }
    }

    fn from_gguf(name: &str) -> Option<Self> {
        match name {
            "qwen2" => Some(Self::Qwen2),
            "qwen3" => Some(Self::Qwen3),
            "llama" => Some(Self::Llama),
            _ => None,
        }
    }

    /// Whether RoPE rotates adjacent pairs (llama.cpp mode 0) rather than the two halves (NeoX).
    pub fn interleaved_rope(self) -> bool {
        matches!(self, Self::Llama)
    }
}

/// The shape of one model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    pub arch: Arch,
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_layers: usize,
    pub num_heads: usize,
    pub num_kv_heads: usize,
    pub head_dim: usize,
    pub rms_eps: f64,
    pub rope_theta: f64,
    /// Longest sequence the model was trained for; the cache never grows past it.
    pub context_length: usize,
}

impl ModelConfig {
    /// Reads the config from GGUF metadata; `vocab_size` comes from the embedding's shape.
    pub fn from_gguf(content: &Content, vocab_size: usize) -> Result<Self, EngineError> {
        let md = &content.metadata;
        let arch_name = get(md, "general.architecture")?
            .to_string()
            .map_err(|e| bad("general.architecture", e))?
            .clone();
        let arch = Arch::from_gguf(&arch_name).ok_or_else(|| {
            EngineError::InvalidRequest(format!("unsupported architecture `{arch_name}`"))
        })?;
        let key = |k: &str| format!("{arch_name}.{k}");
        let hidden_size = get_usize(md, &key("embedding_length"))?;
        let num_heads = get_usize(md, &key("attention.head_count"))?;
        let num_kv_heads = get_usize(md, &key("attention.head_count_kv"))?;
        let head_dim = match md.get(&key("attention.key_length")) {
            Some(v) => as_usize(v, "attention.key_length")?,
            None => hidden_size / num_heads.max(1),
        };
        let rms_eps = get(md, &key("attention.layer_norm_rms_epsilon"))?
            .to_f32()
            .map_err(|e| bad("attention.layer_norm_rms_epsilon", e))? as f64;
        let rope_theta = match md.get(&key("rope.freq_base")) {
            Some(v) => v.to_f32().map_err(|e| bad("rope.freq_base", e))? as f64,
            None => 10_000.0,
        };
        let config = Self {
            arch,
            vocab_size,
            hidden_size,
            num_layers: get_usize(md, &key("block_count"))?,
            num_heads,
            num_kv_heads,
            head_dim,
            rms_eps,
            rope_theta,
            context_length: get_usize(md, &key("context_length"))?,
        };
        config.validate()?;
        Ok(config)
    }

    pub(crate) fn validate(&self) -> Result<(), EngineError> {
        let ok = self.num_heads > 0
            && self.num_kv_heads > 0
            && self.num_heads.is_multiple_of(self.num_kv_heads)
            && self.head_dim.is_multiple_of(2)
            && self.head_dim > 0
            && self.context_length > 0
            && self.num_layers > 0;
        if ok {
            Ok(())
        } else {
            Err(EngineError::InvalidRequest(format!(
                "inconsistent model config {self:?}"
            )))
        }
    }

    /// Bytes of K and V one cached token takes (f32).
    pub fn kv_bytes_per_token(&self) -> usize {
        2 * self.num_layers * self.num_kv_heads * self.head_dim * 4
    }
}

fn get<'a>(md: &'a HashMap<String, Value>, key: &str) -> Result<&'a Value, EngineError> {
    md.get(key)
        .ok_or_else(|| EngineError::InvalidRequest(format!("GGUF metadata lacks `{key}`")))
}

fn get_usize(md: &HashMap<String, Value>, key: &str) -> Result<usize, EngineError> {
    as_usize(get(md, key)?, key)
}

fn as_usize(v: &Value, key: &str) -> Result<usize, EngineError> {
    let n = match v {
        Value::U8(n) => *n as u64,
        Value::U16(n) => *n as u64,
        Value::U32(n) => *n as u64,
        Value::U64(n) => *n,
        Value::I32(n) if *n >= 0 => *n as u64,
        Value::I64(n) if *n >= 0 => *n as u64,
        other => {
            return Err(EngineError::InvalidRequest(format!(
                "GGUF `{key}` is not a count: {other:?}"
            )));
        }
    };
    usize::try_from(n).map_err(|_| EngineError::InvalidRequest(format!("GGUF `{key}` too big")))
}

fn bad(key: &str, err: candle_core::Error) -> EngineError {
    EngineError::InvalidRequest(format!("GGUF `{key}`: {err}"))
}

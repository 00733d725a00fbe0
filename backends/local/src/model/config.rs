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
        self.check_limits()?;
        let ok = self.hidden_size > 0
            && self.num_heads > 0
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

    /// Refuses sizes no model has. They come from the file's header, and they size the RoPE
    /// tables, the KV cache and the expected shape of every weight: within these limits every
    /// product of them fits in 64 bits, and the RoPE tables, which the file's own length does
    /// not bound, stay within [`MAX_ROPE_VALUES`].
    fn check_limits(&self) -> Result<(), EngineError> {
        let limits = [
            ("hidden size", self.hidden_size, MAX_WIDTH),
            ("head dim", self.head_dim, MAX_HEAD_DIM),
            ("attention heads", self.num_heads, MAX_HEADS),
            ("KV heads", self.num_kv_heads, MAX_HEADS),
            ("layers", self.num_layers, MAX_LAYERS),
            ("context length", self.context_length, MAX_CONTEXT),
        ];
        for (what, value, max) in limits {
            if value > max {
                return Err(EngineError::InvalidRequest(format!(
                    "model config: {what} {value} is over the supported {max}"
                )));
            }
        }
        let rope = self.context_length.checked_mul(self.head_dim / 2);
        if rope.is_none_or(|n| n > MAX_ROPE_VALUES) {
            return Err(EngineError::InvalidRequest(format!(
                "model config: RoPE tables for {} positions of head dim {} exceed {MAX_ROPE_VALUES} values",
                self.context_length, self.head_dim
            )));
        }
        Ok(())
    }

    /// Width of the query projection, `heads · head_dim` (saturating: a config that passed
    /// [`Self::validate`] is far from the limit).
    pub fn q_dim(&self) -> usize {
        self.num_heads.saturating_mul(self.head_dim)
    }

    /// Width of the key and value projections, `kv_heads · head_dim` (saturating, as
    /// [`Self::q_dim`]).
    pub fn kv_dim(&self) -> usize {
        self.num_kv_heads.saturating_mul(self.head_dim)
    }

    /// Bytes of K and V one cached token takes, at `element` bytes a value (see
    /// [`crate::model::kv_dtype`]). Saturating: it is compared with memory budgets, and any
    /// size past `usize::MAX` is over all of them.
    pub fn kv_bytes_per_token(&self, element: usize) -> usize {
        [self.num_layers, self.kv_dim(), element]
            .iter()
            .fold(2usize, |n, &f| n.saturating_mul(f))
    }
}

/// Largest hidden size accepted; released models stay under 2^15.
const MAX_WIDTH: usize = 1 << 20;
/// Largest head dimension accepted; released models use 64 to 256.
const MAX_HEAD_DIM: usize = 1 << 12;
/// Most attention (or KV) heads accepted; released models have at most a few hundred.
const MAX_HEADS: usize = 1 << 12;
/// Most layers accepted; released models have at most a few hundred.
const MAX_LAYERS: usize = 1 << 12;
/// Longest context accepted: 16M positions, past every released window.
const MAX_CONTEXT: usize = 1 << 24;
/// Most values in each RoPE table (`context_length · head_dim / 2`), 1 GiB of f32: a
/// 1M-token window at head dim 128 takes a quarter of it.
pub(crate) const MAX_ROPE_VALUES: usize = 1 << 28;

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

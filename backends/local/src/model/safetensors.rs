//! Loads a [`Model`] from a Hugging Face directory: `config.json`, `tokenizer.json` and the
//! weights in `*.safetensors` (one file, or shards listed in `model.safetensors.index.json`).
//! Qwen2/Qwen2.5 and Qwen3 dense. Weights may be f32, bf16 or f16; all are widened to f32 at
//! load, because candle's CPU bf16 matmul is several times slower than f32 (docs/inference.md
//! §3.2). Like the GGUF loader it is transactional: everything lives in locals until the model
//! is assembled, so a failure frees all of it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::quantized::QMatMul;
use candle_core::{DType, Device, Tensor};
use serde::Deserialize;

use crate::error::EngineError;
use crate::model::linear::Linear;
use crate::model::stacked::SharedInput;
use crate::model::transformer::{Attention, Block, Embedding, Mlp, cpu_cores};
use crate::model::{Arch, LoadStage, Model, ModelConfig, Rope};

/// The index of a sharded checkpoint.
const INDEX_FILE: &str = "model.safetensors.index.json";
/// The model's shape.
pub const CONFIG_FILE: &str = "config.json";

/// The fields of `config.json` hearth reads.
#[derive(Debug, Clone, Deserialize)]
struct HfConfig {
    model_type: String,
    vocab_size: usize,
    hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    num_key_value_heads: Option<usize>,
    head_dim: Option<usize>,
    rms_norm_eps: f64,
    rope_theta: Option<f64>,
    max_position_embeddings: usize,
    #[serde(default)]
    tie_word_embeddings: bool,
    #[serde(default)]
    use_sliding_window: bool,
}

fn load_error(path: &Path, message: impl Into<String>) -> EngineError {
    EngineError::Load {
        path: path.display().to_string(),
        message: message.into(),
    }
}

/// Reads `dir/config.json` into a [`ModelConfig`] (vocabulary size as the config states it)
/// and says whether the output head is tied to the embedding.
pub fn read_config(dir: &Path) -> Result<(ModelConfig, bool), EngineError> {
    let path = dir.join(CONFIG_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| load_error(&path, e.to_string()))?;
    let hf: HfConfig = serde_json::from_str(&text).map_err(|e| load_error(&path, e.to_string()))?;
    let arch = match hf.model_type.as_str() {
        "qwen2" => Arch::Qwen2,
        "qwen3" => Arch::Qwen3,
        other => {
            return Err(load_error(
                &path,
                format!("unsupported model_type `{other}` (qwen2 and qwen3 are)"),
            ));
        }
    };
    if hf.use_sliding_window {
        return Err(load_error(
            &path,
            "sliding-window attention is not supported",
        ));
    }
    let config = ModelConfig {
        arch,
        vocab_size: hf.vocab_size,
        hidden_size: hf.hidden_size,
        num_layers: hf.num_hidden_layers,
        num_heads: hf.num_attention_heads,
        num_kv_heads: hf.num_key_value_heads.unwrap_or(hf.num_attention_heads),
        head_dim: hf
            .head_dim
            .unwrap_or(hf.hidden_size / hf.num_attention_heads.max(1)),
        rms_eps: hf.rms_norm_eps,
        rope_theta: hf.rope_theta.unwrap_or(10_000.0),
        context_length: hf.max_position_embeddings,
    };
    config
        .validate()
        .map_err(|e| load_error(&path, e.to_string()))?;
    Ok((config, hf.tie_word_embeddings))
}

/// The weight files: the shards the index names (each must exist), else every
/// `*.safetensors` in `dir`, sorted.
pub fn weight_files(dir: &Path) -> Result<Vec<PathBuf>, EngineError> {
    let index = dir.join(INDEX_FILE);
    if index.exists() {
        #[derive(Deserialize)]
        struct Index {
            weight_map: HashMap<String, String>,
        }
        let text =
            std::fs::read_to_string(&index).map_err(|e| load_error(&index, e.to_string()))?;
        let parsed: Index =
            serde_json::from_str(&text).map_err(|e| load_error(&index, e.to_string()))?;
        let mut files: Vec<String> = parsed.weight_map.into_values().collect();
        files.sort();
        files.dedup();
        let mut out = Vec::with_capacity(files.len());
        for name in files {
            let path = dir.join(&name);
            if !path.is_file() {
                return Err(load_error(
                    &path,
                    format!("shard listed in {INDEX_FILE} is missing"),
                ));
            }
            out.push(path);
        }
        return Ok(out);
    }
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| load_error(dir, e.to_string()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "safetensors"))
        .collect();
    out.sort();
    if out.is_empty() {
        return Err(load_error(dir, "no *.safetensors weight files"));
    }
    Ok(out)
}

/// The stored dtype of the weights as a label (`BF16`, `F16`, `F32`).
fn dtype_label(dtype: DType) -> String {
    format!("{dtype:?}").to_uppercase()
}

/// The dtype of the first weight file's tensors, read from its JSON header only (the format
/// is an 8-byte little-endian length, then that much JSON).
pub fn stored_dtype(files: &[PathBuf]) -> Result<String, EngineError> {
    use std::io::Read;
    let Some(file) = files.first() else {
        return Ok("unknown".into());
    };
    let bad = |m: String| load_error(file, m);
    let mut f = std::fs::File::open(file).map_err(|e| bad(e.to_string()))?;
    let mut len = [0u8; 8];
    f.read_exact(&mut len).map_err(|e| bad(e.to_string()))?;
    let len = u64::from_le_bytes(len);
    if len > 100 << 20 {
        return Err(bad(format!("safetensors header of {len} bytes")));
    }
    let mut header = vec![0u8; len as usize];
    f.read_exact(&mut header).map_err(|e| bad(e.to_string()))?;
    let header: serde_json::Value =
        serde_json::from_slice(&header).map_err(|e| bad(e.to_string()))?;
    let dtype = header
        .as_object()
        .and_then(|o| {
            o.iter()
                .filter(|(k, _)| *k != "__metadata__")
                .find_map(|(_, v)| v["dtype"].as_str())
        })
        .unwrap_or("unknown");
    Ok(dtype.to_uppercase())
}

/// Every tensor of every shard, with the file it came from.
struct Weights {
    tensors: HashMap<String, (Tensor, PathBuf)>,
    dir: PathBuf,
    bytes: usize,
}

impl Weights {
    fn read(files: &[PathBuf], device: &Device) -> Result<Self, EngineError> {
        let mut tensors = HashMap::new();
        for file in files {
            let loaded = candle_core::safetensors::load(file, device)
                .map_err(|e| load_error(file, e.to_string()))?;
            for (name, tensor) in loaded {
                tensors.insert(name, (tensor, file.clone()));
            }
        }
        let dir = files
            .first()
            .and_then(|f| f.parent())
            .map(Path::to_path_buf)
            .unwrap_or_default();
        Ok(Self {
            tensors,
            dir,
            bytes: 0,
        })
    }

    fn has(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }

    /// Tensor `name` as f32, checked against `shape`.
    fn take(&mut self, name: &str, shape: &[usize]) -> Result<Tensor, EngineError> {
        let (tensor, file) = self
            .tensors
            .remove(name)
            .ok_or_else(|| load_error(&self.dir, format!("missing tensor `{name}`")))?;
        if tensor.dims() != shape {
            return Err(load_error(
                &file,
                format!(
                    "tensor `{name}` has shape {:?}, expected {shape:?}",
                    tensor.dims()
                ),
            ));
        }
        tensor
            .to_dtype(DType::F32)
            .map_err(|e| load_error(&file, format!("tensor `{name}`: {e}")))
    }

    /// A matmul weight `(rows, cols)` as f32; counts its bytes as read per token.
    fn dense(&mut self, name: &str, rows: usize, cols: usize) -> Result<Tensor, EngineError> {
        let t = self.take(name, &[rows, cols])?;
        self.bytes += rows * cols * 4;
        Ok(t)
    }

    fn matmul(&mut self, name: &str, rows: usize, cols: usize) -> Result<QMatMul, EngineError> {
        Ok(QMatMul::Tensor(self.dense(name, rows, cols)?))
    }

    fn vector(&mut self, name: &str, n: usize) -> Result<Tensor, EngineError> {
        self.bytes += n * 4;
        self.take(name, &[n])
    }

    fn optional_vector(&mut self, name: &str, n: usize) -> Result<Option<Tensor>, EngineError> {
        if self.has(name) {
            Ok(Some(self.vector(name, n)?))
        } else {
            Ok(None)
        }
    }
}

/// Loads the model in `dir` onto `device`, calling `hook` after each stage.
pub fn load(
    dir: &Path,
    device: &Device,
    hook: &mut dyn FnMut(LoadStage) -> Result<(), EngineError>,
) -> Result<Model, EngineError> {
    let (mut config, tied) = read_config(dir)?;
    let files = weight_files(dir)?;
    let mut w = Weights::read(&files, device)?;
    let embed_name = "model.embed_tokens.weight";
    let stored = w
        .tensors
        .get(embed_name)
        .map(|(t, _)| (t.dtype(), t.dim(0)))
        .ok_or_else(|| load_error(dir, format!("missing tensor `{embed_name}`")))?;
    let (dtype, vocab) = (stored.0, stored.1.map_err(EngineError::from)?);
    // The embedding's rows are the truth; configs sometimes round vocab_size differently.
    config.vocab_size = vocab;
    hook(LoadStage::Header)?;
    let h = config.hidden_size;
    let embed = w.take(embed_name, &[vocab, h])?;
    hook(LoadStage::Embedding)?;
    let mut blocks = Vec::with_capacity(config.num_layers);
    for i in 0..config.num_layers {
        blocks.push(load_block(&mut w, &config, i)?);
        hook(LoadStage::Block {
            n: i + 1,
            total: config.num_layers,
        })?;
    }
    let norm = w.vector("model.norm.weight", h)?;
    let lm_head = if !tied {
        Linear::Candle(w.matmul("lm_head.weight", vocab, h)?)
    } else {
        w.bytes += vocab * h * 4;
        Linear::Candle(QMatMul::Tensor(embed.clone()))
    };
    hook(LoadStage::Head)?;
    let rope = Rope::new(
        config.head_dim,
        config.rope_theta,
        config.context_length,
        false,
        device,
    )?;
    Ok(Model {
        weight_bytes_per_token: w.bytes,
        cpu_cores: cpu_cores(device),
        config,
        embed: Embedding::Table(QMatMul::Tensor(embed)),
        blocks,
        norm,
        lm_head,
        rope,
        device: device.clone(),
        quantization: dtype_label(dtype),
    })
}

fn load_block(w: &mut Weights, config: &ModelConfig, i: usize) -> Result<Block, EngineError> {
    let p = |s: &str| format!("model.layers.{i}.{s}");
    let (h, d) = (config.hidden_size, config.head_dim);
    let (q_dim, kv_dim) = (config.q_dim(), config.kv_dim());
    let gate = w
        .tensors
        .get(&p("mlp.gate_proj.weight"))
        .map(|(t, _)| t.dim(0))
        .transpose()?
        .ok_or_else(|| {
            load_error(
                &w.dir,
                format!("missing tensor `{}`", p("mlp.gate_proj.weight")),
            )
        })?;
    let qk_norm = config.arch == Arch::Qwen3;
    let attn = Attention {
        qkv: SharedInput::dense(
            vec![
                w.dense(&p("self_attn.q_proj.weight"), q_dim, h)?,
                w.dense(&p("self_attn.k_proj.weight"), kv_dim, h)?,
                w.dense(&p("self_attn.v_proj.weight"), kv_dim, h)?,
            ],
            vec![
                w.optional_vector(&p("self_attn.q_proj.bias"), q_dim)?,
                w.optional_vector(&p("self_attn.k_proj.bias"), kv_dim)?,
                w.optional_vector(&p("self_attn.v_proj.bias"), kv_dim)?,
            ],
        )?,
        wo: Linear::Candle(w.matmul(&p("self_attn.o_proj.weight"), h, q_dim)?),
        q_norm: if qk_norm {
            Some(w.vector(&p("self_attn.q_norm.weight"), d)?)
        } else {
            None
        },
        k_norm: if qk_norm {
            Some(w.vector(&p("self_attn.k_norm.weight"), d)?)
        } else {
            None
        },
    };
    let gate_up = vec![
        w.dense(&p("mlp.gate_proj.weight"), gate, h)?,
        w.dense(&p("mlp.up_proj.weight"), gate, h)?,
    ];
    Ok(Block {
        attn_norm: w.vector(&p("input_layernorm.weight"), h)?,
        attn,
        ffn_norm: w.vector(&p("post_attention_layernorm.weight"), h)?,
        mlp: Mlp {
            gate_up: SharedInput::dense(gate_up, vec![None, None])?,
            down: Linear::Candle(w.matmul(&p("mlp.down_proj.weight"), h, gate)?),
        },
    })
}

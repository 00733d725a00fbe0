//! Loads a [`Model`] from a GGUF file. Loading is transactional: every tensor goes into
//! locals and the model is assembled only at the end, so a failure at any stage drops
//! (frees) everything read so far and an immediate retry starts clean.

use std::fs::File;
use std::io::{BufReader, Read, Seek};
use std::path::Path;
use std::sync::Arc;

use candle_core::quantized::gguf_file::{Content, Value};
use candle_core::quantized::{QMatMul, QTensor};
use candle_core::{Device, Tensor};

use crate::error::EngineError;
use crate::model::linear::Linear;
use crate::model::stacked::SharedInput;
use crate::model::transformer::{Attention, Block, Embedding, Mlp};
use crate::model::{Arch, Model, ModelConfig, Rope};

/// The stages of a load, reported to a hook (progress and, in tests, fault injection).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum LoadStage {
    /// The GGUF header and metadata were read.
    Header,
    /// The embedding table was read.
    Embedding,
    /// Block `n` of `total` was read.
    Block { n: usize, total: usize },
    /// The output norm and head were read; the model is assembled next.
    Head,
}

/// A parsed GGUF: its metadata plus an open reader for the tensor data.
pub struct GgufFile {
    pub content: Content,
    reader: BufReader<File>,
    path: String,
}

impl GgufFile {
    pub fn open(path: &Path) -> Result<Self, EngineError> {
        let load_err = |message: String| EngineError::Load {
            path: path.display().to_string(),
            message,
        };
        let file = File::open(path).map_err(|e| load_err(e.to_string()))?;
        let mut reader = BufReader::new(file);
        let content = Content::read(&mut reader).map_err(|e| load_err(e.to_string()))?;
        Ok(Self {
            content,
            reader,
            path: path.display().to_string(),
        })
    }

    /// Reads one tensor as stored.
    pub fn tensor(&mut self, name: &str) -> Result<QTensor, EngineError> {
        Ok(self.content.tensor(&mut self.reader, name, &Device::Cpu)?)
    }

    /// Reads the weights onto `device`, calling `hook` after each stage.
    pub fn load_model(
        &mut self,
        device: &Device,
        hook: &mut dyn FnMut(LoadStage) -> Result<(), EngineError>,
    ) -> Result<Model, EngineError> {
        let path = self.path.clone();
        load(&self.content, &mut self.reader, device, hook).map_err(|e| match e {
            EngineError::Tensor(err) => EngineError::Load {
                path,
                message: err.to_string(),
            },
            other => other,
        })
    }
}

struct Reader<'a, R> {
    content: &'a Content,
    reader: &'a mut R,
    device: &'a Device,
    bytes: usize,
}

impl<R: Read + Seek> Reader<'_, R> {
    fn qtensor(&mut self, name: &str) -> Result<QTensor, EngineError> {
        let t = self.content.tensor(self.reader, name, self.device)?;
        Ok(t)
    }

    fn has(&self, name: &str) -> bool {
        self.content.tensor_infos.contains_key(name)
    }

    /// A weight for matmuls, as stored; counts its bytes as read per token.
    fn counted(&mut self, name: &str) -> Result<QTensor, EngineError> {
        let t = self.qtensor(name)?;
        self.bytes += t.storage_size_in_bytes();
        Ok(t)
    }

    /// A weight for matmuls; counts its bytes as read per token.
    fn matmul(&mut self, name: &str) -> Result<QMatMul, EngineError> {
        Ok(QMatMul::from_qtensor(self.counted(name)?)?)
    }

    /// A small f32 vector (norms, biases).
    fn vector(&mut self, name: &str) -> Result<Tensor, EngineError> {
        let t = self.qtensor(name)?;
        self.bytes += t.storage_size_in_bytes();
        Ok(t.dequantize(self.device)?)
    }

    fn optional_vector(&mut self, name: &str) -> Result<Option<Tensor>, EngineError> {
        if self.has(name) {
            Ok(Some(self.vector(name)?))
        } else {
            Ok(None)
        }
    }
}

fn load<R: Read + Seek>(
    content: &Content,
    reader: &mut R,
    device: &Device,
    hook: &mut dyn FnMut(LoadStage) -> Result<(), EngineError>,
) -> Result<Model, EngineError> {
    let embed_info = content
        .tensor_infos
        .get("token_embd.weight")
        .ok_or_else(|| EngineError::InvalidRequest("GGUF lacks token_embd.weight".into()))?;
    let (vocab_size, _) = embed_info.shape.dims2()?;
    let config = ModelConfig::from_gguf(content, vocab_size)?;
    hook(LoadStage::Header)?;
    let mut r = Reader {
        content,
        reader,
        device,
        bytes: 0,
    };
    let embed = Arc::new(r.qtensor("token_embd.weight")?);
    hook(LoadStage::Embedding)?;
    let mut blocks = Vec::with_capacity(config.num_layers);
    for i in 0..config.num_layers {
        blocks.push(load_block(&mut r, &config, i)?);
        hook(LoadStage::Block {
            n: i + 1,
            total: config.num_layers,
        })?;
    }
    let norm = r.vector("output_norm.weight")?;
    let (embed, lm_head) = if r.has("output.weight") {
        let head = Linear::new(r.matmul("output.weight")?)?;
        (Embedding::Table(QMatMul::from_arc(embed)?), head)
    } else {
        r.bytes += embed.storage_size_in_bytes();
        let head = Linear::new(QMatMul::from_arc(embed.clone())?)?;
        // A packed head holds the table's values itself; the embedding reads them there and
        // the original table is dropped.
        match head.is_packed() {
            true => (Embedding::TiedToHead, head),
            false => (Embedding::Table(QMatMul::from_arc(embed)?), head),
        }
    };
    hook(LoadStage::Head)?;
    let quantization = quantization_label(content);
    let rope = Rope::new(
        config.head_dim,
        config.rope_theta,
        config.context_length,
        config.arch.interleaved_rope(),
        device,
    )?;
    Ok(Model {
        weight_bytes_per_token: r.bytes,
        config,
        embed,
        blocks,
        norm,
        lm_head,
        rope,
        device: device.clone(),
        quantization,
    })
}

fn load_block<R: Read + Seek>(
    r: &mut Reader<'_, R>,
    config: &ModelConfig,
    i: usize,
) -> Result<Block, EngineError> {
    let p = |s: &str| format!("blk.{i}.{s}");
    let qk_norm = config.arch == Arch::Qwen3;
    let qkv = ["attn_q", "attn_k", "attn_v"];
    let weights = qkv
        .iter()
        .map(|n| r.counted(&p(&format!("{n}.weight"))))
        .collect::<Result<Vec<_>, _>>()?;
    let biases = qkv
        .iter()
        .map(|n| r.optional_vector(&p(&format!("{n}.bias"))))
        .collect::<Result<Vec<_>, _>>()?;
    let attn = Attention {
        qkv: SharedInput::quantized(weights, biases)?,
        wo: Linear::new(r.matmul(&p("attn_output.weight"))?)?,
        q_norm: if qk_norm {
            Some(r.vector(&p("attn_q_norm.weight"))?)
        } else {
            None
        },
        k_norm: if qk_norm {
            Some(r.vector(&p("attn_k_norm.weight"))?)
        } else {
            None
        },
    };
    let gate_up = vec![
        r.counted(&p("ffn_gate.weight"))?,
        r.counted(&p("ffn_up.weight"))?,
    ];
    Ok(Block {
        attn_norm: r.vector(&p("attn_norm.weight"))?,
        attn,
        ffn_norm: r.vector(&p("ffn_norm.weight"))?,
        mlp: Mlp {
            gate_up: SharedInput::quantized(gate_up, vec![None, None])?,
            down: Linear::new(r.matmul(&p("ffn_down.weight"))?)?,
        },
    })
}

/// `general.file_type` as llama.cpp names it, else the dtype of the first query weight.
pub(crate) fn quantization_label(content: &Content) -> String {
    let from_ftype = match content.metadata.get("general.file_type") {
        Some(Value::U32(n)) => ftype_name(*n),
        Some(Value::I32(n)) if *n >= 0 => ftype_name(*n as u32),
        _ => None,
    };
    match from_ftype {
        Some(name) => name.to_string(),
        None => content
            .tensor_infos
            .get("blk.0.attn_q.weight")
            .map(|t| format!("{:?}", t.ggml_dtype).to_uppercase())
            .unwrap_or_else(|| "unknown".into()),
    }
}

/// llama.cpp's `llama_ftype` values.
fn ftype_name(n: u32) -> Option<&'static str> {
    Some(match n {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        7 => "Q8_0",
        8 => "Q5_0",
        9 => "Q5_1",
        10 => "Q2_K",
        11 => "Q3_K_S",
        12 => "Q3_K_M",
        13 => "Q3_K_L",
        14 => "Q4_K_S",
        15 => "Q4_K_M",
        16 => "Q5_K_S",
        17 => "Q5_K_M",
        18 => "Q6_K",
        32 => "BF16",
        _ => return None,
    })
}

//! Loads a [`Model`] from a GGUF file. Loading is transactional: every tensor goes into
//! locals and the model is assembled only at the end, so a failure at any stage drops
//! (frees) everything read so far and an immediate retry starts clean.

use std::fs::File;
use std::io::{BufReader, Read, Seek};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::Arc;

use candle_core::quantized::gguf_file::{Content, Value};
use candle_core::quantized::{QMatMul, QTensor};
use candle_core::{Device, Tensor};

use crate::error::EngineError;
use crate::model::disk_rows::DiskRows;
use crate::model::gguf_check::{self, GgufLayoutError};
use crate::model::gguf_types;
use crate::model::linear::{self, Kernels, Linear, Packing};
use crate::model::stacked::SharedInput;
use crate::model::transformer::{Attention, Block, Embedding, Mlp, cpu_cores};
use crate::model::{Arch, Model, ModelConfig, Rope};

/// The stages of a load, reported to a hook (progress and, in tests, fault injection).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum LoadStage {
    /// The GGUF header and metadata were read.
    Header,
    /// The embedding table was read (and, from a GGUF, the output head).
    Embedding,
    /// Block `n` of `total` was read.
    Block { n: usize, total: usize },
    /// The output norm (and, from safetensors, the head) was read; the model is assembled
    /// next.
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
        let file_len = file.metadata().map_err(|e| load_err(e.to_string()))?.len();
        let mut reader = BufReader::new(file);
        // candle's reader divides by the header's `general.alignment` unchecked, so a crafted
        // 0 panics inside it; a bad file must be a load error, not a crash of the caller
        // (which may be the agent itself, reading the header for the context window).
        let read = catch_unwind(AssertUnwindSafe(|| Content::read(&mut reader)));
        let content = match read {
            // candle names a type it lacks by its id alone; name the tensor and the type.
            Ok(Err(e)) => {
                let unreadable = File::open(path)
                    .ok()
                    .and_then(|f| gguf_types::unreadable_tensor(&mut BufReader::new(f)));
                return Err(load_err(match unreadable {
                    Some(tensor) => tensor.to_string(),
                    None => e.to_string(),
                }));
            }
            Ok(Ok(content)) => content,
            Err(panic) => {
                return Err(load_err(format!(
                    "malformed header: {}",
                    panic_text(&panic)
                )));
            }
        };
        gguf_check::check_tensors(&content, file_len).map_err(|e| load_err(e.to_string()))?;
        Ok(Self {
            content,
            reader,
            path: path.display().to_string(),
        })
    }

    /// Whether every matrix the model multiplies by (each block's projections and the output
    /// head, or the embedding table where the head is tied to it) is packed for this CPU's
    /// kernels when it loads, none left on candle's slower path: then the file runs as it is
    /// (see `engine_file`).
    pub fn packs_whole_on_this_cpu(&self) -> bool {
        let infos = &self.content.tensor_infos;
        let tied = !infos.contains_key("output.weight");
        infos
            .iter()
            .filter(|(name, info)| {
                name.ends_with(".weight")
                    && info.shape.rank() == 2
                    && (tied || name.as_str() != "token_embd.weight")
            })
            .all(|(_, info)| {
                let (rows, cols) = (info.shape.dims()[0], info.shape.dims()[1]);
                linear::packs_here(info.ggml_dtype, rows, cols)
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
        self.load_model_with(device, Kernels::Fastest, hook)
    }

    /// [`Self::load_model`] with the weights packed for `kernels`.
    pub fn load_model_with(
        &mut self,
        device: &Device,
        kernels: Kernels,
        hook: &mut dyn FnMut(LoadStage) -> Result<(), EngineError>,
    ) -> Result<Model, EngineError> {
        let path = self.path.clone();
        // A second descriptor of the same open file: a path opened again could be another
        // file by now. Positional reads leave the shared offset alone.
        let table_file = self.reader.get_ref().try_clone().ok();
        let reader = &mut self.reader;
        load(
            &self.content,
            reader,
            table_file,
            &path,
            device,
            kernels,
            hook,
        )
        .map_err(|e| match e {
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
    path: &'a str,
    device: &'a Device,
    packing: Packing,
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

    /// A shape mismatch or bad layout in the file, as the load error that names the file.
    fn bad(&self, err: GgufLayoutError) -> EngineError {
        EngineError::Load {
            path: self.path.to_string(),
            message: err.to_string(),
        }
    }

    /// Checks that tensor `name` has shape `want` before it is read.
    fn expect(&self, name: &str, want: &[usize]) -> Result<(), EngineError> {
        gguf_check::expect_shape(self.content, name, want).map_err(|e| self.bad(e))
    }

    /// The rows of 2-D tensor `name` (its first dimension), for a width the config does not
    /// give (the MLP's); [`Self::expect`] checks the whole shape afterwards.
    fn rows(&self, name: &str) -> Result<usize, EngineError> {
        let dims = gguf_check::dims(self.content, name).map_err(|e| self.bad(e))?;
        Ok(dims.first().copied().unwrap_or(0))
    }

    /// A weight for matmuls of shape `want`, as stored; counts its bytes as read per token.
    fn counted(&mut self, name: &str, want: &[usize]) -> Result<QTensor, EngineError> {
        self.expect(name, want)?;
        let t = self.qtensor(name)?;
        self.bytes += t.storage_size_in_bytes();
        Ok(t)
    }

    /// A weight for matmuls of shape `want`; counts its bytes as read per token.
    fn matmul(&mut self, name: &str, want: &[usize]) -> Result<QMatMul, EngineError> {
        Ok(QMatMul::from_qtensor(self.counted(name, want)?)?)
    }

    /// A linear layer of shape `want`, packed where a kernel serves it; counts its bytes as
    /// read per token.
    fn linear(&mut self, name: &str, want: &[usize]) -> Result<Linear, EngineError> {
        let weight = self.matmul(name, want)?;
        self.packing.linear(weight)
    }

    /// A small f32 vector of length `n` (norms, biases).
    fn vector(&mut self, name: &str, n: usize) -> Result<Tensor, EngineError> {
        self.expect(name, &[n])?;
        let t = self.qtensor(name)?;
        self.bytes += t.storage_size_in_bytes();
        Ok(t.dequantize(self.device)?)
    }

    fn optional_vector(&mut self, name: &str, n: usize) -> Result<Option<Tensor>, EngineError> {
        if self.has(name) {
            Ok(Some(self.vector(name, n)?))
        } else {
            Ok(None)
        }
    }
}

/// `table_file`: the GGUF file opened again, from which an untied embedding table on the CPU
/// is read row by row instead of being held (see [`DiskRows`]).
fn load<R: Read + Seek>(
    content: &Content,
    reader: &mut R,
    table_file: Option<File>,
    path: &str,
    device: &Device,
    kernels: Kernels,
    hook: &mut dyn FnMut(LoadStage) -> Result<(), EngineError>,
) -> Result<Model, EngineError> {
    let embed_info = content
        .tensor_infos
        .get("token_embd.weight")
        .ok_or_else(|| EngineError::InvalidRequest("GGUF lacks token_embd.weight".into()))?;
    let (vocab_size, _) = embed_info.shape.dims2()?;
    let (embed_at, dtype) = (
        content.tensor_data_offset.saturating_add(embed_info.offset),
        embed_info.ggml_dtype,
    );
    let config = ModelConfig::from_gguf(content, vocab_size)?;
    hook(LoadStage::Header)?;
    let mut r = Reader {
        content,
        reader,
        path,
        device,
        packing: Packing::new(kernels),
        bytes: 0,
    };
    let table = [vocab_size, config.hidden_size];
    r.expect("token_embd.weight", &table)?;
    // The output head first: it is the largest matrix, and packing holds it twice for a
    // moment (as read and as packed). Read last, that moment came on top of every block and
    // set the load's peak memory (+140 MiB on the 0.5B's Q4_K_M).
    let (embed, lm_head) = if r.has("output.weight") {
        let head = r.linear("output.weight", &table)?;
        let on_disk = table_file
            .filter(|_| device.is_cpu())
            .and_then(|file| DiskRows::new(file, path, embed_at, (vocab_size, table[1]), dtype));
        let embed = match on_disk {
            Some(rows) => Embedding::OnDisk(rows),
            None => Embedding::Table(QMatMul::from_qtensor(r.qtensor("token_embd.weight")?)?),
        };
        (embed, head)
    } else {
        let embed = Arc::new(r.qtensor("token_embd.weight")?);
        r.bytes += embed.storage_size_in_bytes();
        let head = r.packing.linear(QMatMul::from_arc(embed.clone())?)?;
        // A packed head holds the table's values itself; the embedding reads them there and
        // the original table is dropped.
        match head.is_packed() {
            true => (Embedding::TiedToHead, head),
            false => (Embedding::Table(QMatMul::from_arc(embed)?), head),
        }
    };
    hook(LoadStage::Embedding)?;
    let mut blocks = Vec::with_capacity(config.num_layers);
    for i in 0..config.num_layers {
        blocks.push(load_block(&mut r, &config, i)?);
        hook(LoadStage::Block {
            n: i + 1,
            total: config.num_layers,
        })?;
    }
    let norm = r.vector("output_norm.weight", config.hidden_size)?;
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
        cpu_cores: cpu_cores(device),
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
    // Every weight is held to the config's sizes before it is read: the kernels and reshapes
    // of the forward pass size their buffers from the config, not from the tensors.
    let (h, d) = (config.hidden_size, config.head_dim);
    let (q_dim, kv_dim) = (config.q_dim(), config.kv_dim());
    let qkv = [("attn_q", q_dim), ("attn_k", kv_dim), ("attn_v", kv_dim)];
    let weights = qkv
        .iter()
        .map(|&(n, rows)| r.counted(&p(&format!("{n}.weight")), &[rows, h]))
        .collect::<Result<Vec<_>, _>>()?;
    let biases = qkv
        .iter()
        .map(|&(n, rows)| r.optional_vector(&p(&format!("{n}.bias")), rows))
        .collect::<Result<Vec<_>, _>>()?;
    let attn = Attention {
        qkv: SharedInput::quantized(weights, biases, &r.packing)?,
        wo: r.linear(&p("attn_output.weight"), &[h, q_dim])?,
        q_norm: if qk_norm {
            Some(r.vector(&p("attn_q_norm.weight"), d)?)
        } else {
            None
        },
        k_norm: if qk_norm {
            Some(r.vector(&p("attn_k_norm.weight"), d)?)
        } else {
            None
        },
    };
    let ffn = r.rows(&p("ffn_gate.weight"))?;
    let gate_up = vec![
        r.counted(&p("ffn_gate.weight"), &[ffn, h])?,
        r.counted(&p("ffn_up.weight"), &[ffn, h])?,
    ];
    Ok(Block {
        attn_norm: r.vector(&p("attn_norm.weight"), h)?,
        attn,
        ffn_norm: r.vector(&p("ffn_norm.weight"), h)?,
        mlp: Mlp {
            gate_up: SharedInput::quantized(gate_up, vec![None, None], &r.packing)?,
            down: r.linear(&p("ffn_down.weight"), &[h, ffn])?,
        },
    })
}

/// A panic's message, for a load error.
fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    match (panic.downcast_ref::<&str>(), panic.downcast_ref::<String>()) {
        (Some(text), _) => (*text).to_string(),
        (_, Some(text)) => text.clone(),
        _ => "the GGUF reader panicked".into(),
    }
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

//! Test support: writes tiny random-weight GGUF models (Qwen2, Qwen3, Llama shapes) with a
//! byte-level ChatML tokenizer in their metadata, so tests need no download.

use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file::Value;
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};

use crate::model::Arch;

/// Shape and format of a tiny model.
#[derive(Debug, Clone, Copy)]
pub struct TinySpec {
    pub arch: Arch,
    pub weights: GgmlDType,
    pub hidden: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub ffn: usize,
    pub layers: usize,
    pub context: usize,
    pub seed: u64,
}

impl TinySpec {
    pub fn qwen2() -> Self {
        Self {
            arch: Arch::Qwen2,
            weights: GgmlDType::Q8_0,
            hidden: 64,
            heads: 4,
            kv_heads: 2,
            head_dim: 16,
            ffn: 128,
            layers: 2,
            context: 512,
            seed: 7,
        }
    }

    /// Qwen3 with q/k norm and a head_dim that does not divide hidden evenly into heads.
    pub fn qwen3() -> Self {
        Self {
            arch: Arch::Qwen3,
            head_dim: 32,
            seed: 11,
            ..Self::qwen2()
        }
    }

    pub fn llama() -> Self {
        Self {
            arch: Arch::Llama,
            seed: 13,
            ..Self::qwen2()
        }
    }
}

/// The special tokens of the tiny vocabulary, after the 256 byte tokens.
pub const SPECIALS: [&str; 3] = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"];
/// Vocabulary size: bytes, specials, padding to a round number.
pub const VOCAB: usize = 288;

struct Rng(u64);

impl Rng {
    /// splitmix64 mapped to roughly N(0, 1) by summing uniforms.
    fn normal(&mut self) -> f32 {
        let mut acc = 0.0f32;
        for _ in 0..4 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            acc += (z >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
        }
        acc * 1.7
    }
}

/// GPT-2's byte-to-character map used by byte-level BPE vocabularies.
pub fn byte_token(b: u8) -> String {
    let printable = |c: u32| (33..=126).contains(&c) || (161..=172).contains(&c) || c >= 174;
    if printable(b as u32) {
        return char::from_u32(b as u32)
            .map(String::from)
            .unwrap_or_default();
    }
    let rank = (0..b as u32).filter(|c| !printable(*c)).count() as u32;
    char::from_u32(256 + rank)
        .map(String::from)
        .unwrap_or_default()
}

fn tensor(rng: &mut Rng, shape: &[usize], scale: f32, dtype: GgmlDType) -> QTensor {
    let n: usize = shape.iter().product();
    let data: Vec<f32> = (0..n).map(|_| rng.normal() * scale).collect();
    let t = Tensor::from_vec(data, shape, &Device::Cpu).unwrap();
    QTensor::quantize(&t, dtype).unwrap()
}

fn norm(rng: &mut Rng, n: usize) -> QTensor {
    let data: Vec<f32> = (0..n).map(|_| 1.0 + 0.1 * rng.normal()).collect();
    let t = Tensor::from_vec(data, n, &Device::Cpu).unwrap();
    QTensor::quantize(&t, GgmlDType::F32).unwrap()
}

/// Writes the model to `dir/name.gguf` and returns the path.
pub fn write(spec: &TinySpec, dir: &Path, name: &str) -> PathBuf {
    let mut rng = Rng(spec.seed);
    let w = spec.weights;
    let (h, q_dim, kv_dim) = (
        spec.hidden,
        spec.heads * spec.head_dim,
        spec.kv_heads * spec.head_dim,
    );
    let mut tensors: Vec<(String, QTensor)> = vec![
        (
            "token_embd.weight".into(),
            tensor(&mut rng, &[VOCAB, h], 0.5, w),
        ),
        ("output_norm.weight".into(), norm(&mut rng, h)),
    ];
    if spec.arch != Arch::Qwen3 {
        tensors.push((
            "output.weight".into(),
            tensor(&mut rng, &[VOCAB, h], 0.3, w),
        ));
    }
    for i in 0..spec.layers {
        let p = |s: &str| format!("blk.{i}.{s}");
        let scale = 0.2;
        tensors.push((p("attn_norm.weight"), norm(&mut rng, h)));
        tensors.push((p("attn_q.weight"), tensor(&mut rng, &[q_dim, h], scale, w)));
        tensors.push((p("attn_k.weight"), tensor(&mut rng, &[kv_dim, h], scale, w)));
        tensors.push((p("attn_v.weight"), tensor(&mut rng, &[kv_dim, h], scale, w)));
        tensors.push((
            p("attn_output.weight"),
            tensor(&mut rng, &[h, q_dim], scale, w),
        ));
        if spec.arch == Arch::Qwen2 {
            let f32 = GgmlDType::F32;
            tensors.push((p("attn_q.bias"), tensor(&mut rng, &[q_dim], 0.1, f32)));
            tensors.push((p("attn_k.bias"), tensor(&mut rng, &[kv_dim], 0.1, f32)));
            tensors.push((p("attn_v.bias"), tensor(&mut rng, &[kv_dim], 0.1, f32)));
        }
        if spec.arch == Arch::Qwen3 {
            tensors.push((p("attn_q_norm.weight"), norm(&mut rng, spec.head_dim)));
            tensors.push((p("attn_k_norm.weight"), norm(&mut rng, spec.head_dim)));
        }
        tensors.push((p("ffn_norm.weight"), norm(&mut rng, h)));
        tensors.push((
            p("ffn_gate.weight"),
            tensor(&mut rng, &[spec.ffn, h], scale, w),
        ));
        tensors.push((
            p("ffn_up.weight"),
            tensor(&mut rng, &[spec.ffn, h], scale, w),
        ));
        tensors.push((
            p("ffn_down.weight"),
            tensor(&mut rng, &[h, spec.ffn], scale, w),
        ));
    }
    let metadata = metadata(spec);
    let md: Vec<(&str, &Value)> = metadata.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let ts: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let path = dir.join(format!("{name}.gguf"));
    let mut file = std::fs::File::create(&path).unwrap();
    candle_core::quantized::gguf_file::write(&mut file, &md, &ts).unwrap();
    path
}

pub(crate) fn metadata(spec: &TinySpec) -> Vec<(String, Value)> {
    let a = spec.arch.gguf_name();
    let mut tokens: Vec<Value> = (0..=255u8).map(|b| Value::String(byte_token(b))).collect();
    let mut types: Vec<Value> = vec![Value::I32(1); 256];
    for s in SPECIALS {
        tokens.push(Value::String(s.into()));
        types.push(Value::I32(3));
    }
    while tokens.len() < VOCAB {
        tokens.push(Value::String(format!("[PAD{}]", tokens.len())));
        types.push(Value::I32(3));
    }
    let n = |v: usize| Value::U32(v as u32);
    vec![
        ("general.architecture".into(), Value::String(a.into())),
        (format!("{a}.embedding_length"), n(spec.hidden)),
        (format!("{a}.block_count"), n(spec.layers)),
        (format!("{a}.attention.head_count"), n(spec.heads)),
        (format!("{a}.attention.head_count_kv"), n(spec.kv_heads)),
        (format!("{a}.attention.key_length"), n(spec.head_dim)),
        (
            format!("{a}.attention.layer_norm_rms_epsilon"),
            Value::F32(1e-6),
        ),
        (format!("{a}.rope.freq_base"), Value::F32(10_000.0)),
        (format!("{a}.context_length"), n(spec.context)),
        ("tokenizer.ggml.model".into(), Value::String("gpt2".into())),
        ("tokenizer.ggml.pre".into(), Value::String("qwen2".into())),
        ("tokenizer.ggml.tokens".into(), Value::Array(tokens)),
        ("tokenizer.ggml.token_type".into(), Value::Array(types)),
        ("tokenizer.ggml.merges".into(), Value::Array(vec![])),
        ("tokenizer.ggml.eos_token_id".into(), n(258)),
        ("tokenizer.ggml.bos_token_id".into(), n(256)),
    ]
}

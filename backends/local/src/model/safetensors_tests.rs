//! Safetensors checkpoints written by the tests themselves (seeded random weights, a
//! byte-level tokenizer.json, a config.json), checked against the same
//! weights stored as an f32 GGUF and for chunked-prefill consistency and load errors.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{DType, Device, Tensor};
use serde_json::json;

use super::tiny::{self, TinySpec, VOCAB};
use super::*;
use crate::engine::{Engine, EngineConfig, EngineEvent, GenerateRequest, Health, Prompt};
use crate::error::EngineError;
use crate::sampler::SamplingParams;
use crate::tokenizer::TextTokenizer;

/// Random weights under their Hugging Face names, f32 values already rounded to `dtype`.
/// Drawn from a fixed seed: weights drawn afresh each run made the chunked-prefill test fail
/// about one run in fifteen, when a draw put a logit's rounding just past its tolerance.
fn random_weights(spec: &TinySpec, tied: bool, dtype: DType) -> Vec<(String, Tensor)> {
    let mut normal = seeded_normal(0x5eed_0f0a_7e57);
    let mut weights: Vec<(String, Tensor)> = Vec::new();
    let (h, d) = (spec.hidden, spec.head_dim);
    let (q, kv, f) = (spec.heads * d, spec.kv_heads * d, spec.ffn);
    let mut get = |shape: Vec<usize>, name: &str, (mean, stdev): (f32, f32)| {
        let n = shape.iter().product();
        let values: Vec<f32> = (0..n).map(|_| mean + stdev * normal()).collect();
        let t = Tensor::from_vec(values, shape, &Device::Cpu).unwrap();
        weights.push((name.to_string(), t));
    };
    let randn = |stdev| (0.0, stdev);
    let norm = (1.0, 0.1);
    get(vec![VOCAB, h], "model.embed_tokens.weight", randn(0.5));
    get(vec![h], "model.norm.weight", norm);
    if !tied {
        get(vec![VOCAB, h], "lm_head.weight", randn(0.3));
    }
    for i in 0..spec.layers {
        let p = |s: &str| format!("model.layers.{i}.{s}");
        get(vec![h], &p("input_layernorm.weight"), norm);
        get(vec![h], &p("post_attention_layernorm.weight"), norm);
        get(vec![q, h], &p("self_attn.q_proj.weight"), randn(0.2));
        get(vec![kv, h], &p("self_attn.k_proj.weight"), randn(0.2));
        get(vec![kv, h], &p("self_attn.v_proj.weight"), randn(0.2));
        get(vec![h, q], &p("self_attn.o_proj.weight"), randn(0.2));
        if spec.arch == Arch::Qwen2 {
            get(vec![q], &p("self_attn.q_proj.bias"), randn(0.1));
            get(vec![kv], &p("self_attn.k_proj.bias"), randn(0.1));
            get(vec![kv], &p("self_attn.v_proj.bias"), randn(0.1));
        } else {
            get(vec![d], &p("self_attn.q_norm.weight"), norm);
            get(vec![d], &p("self_attn.k_norm.weight"), norm);
        }
        get(vec![f, h], &p("mlp.gate_proj.weight"), randn(0.2));
        get(vec![f, h], &p("mlp.up_proj.weight"), randn(0.2));
        get(vec![h, f], &p("mlp.down_proj.weight"), randn(0.2));
    }
    let mut out: Vec<(String, Tensor)> = weights
        .into_iter()
        .map(|(k, v)| {
            let t = v.to_dtype(dtype).unwrap();
            (k, t.to_dtype(DType::F32).unwrap())
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Standard normal values from `seed`: xorshift64 and the Box–Muller transform.
fn seeded_normal(mut seed: u64) -> impl FnMut() -> f32 {
    let mut uniform = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // 53 bits into (0, 1]: never 0, whose logarithm Box–Muller takes.
        ((seed >> 11) + 1) as f64 / (1u64 << 53) as f64
    };
    move || {
        let (u, v) = (uniform(), uniform());
        ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
    }
}

/// The GGUF name of a Hugging Face tensor name.
fn gguf_name(hf: &str) -> String {
    let direct = [
        ("model.embed_tokens.weight", "token_embd.weight"),
        ("model.norm.weight", "output_norm.weight"),
        ("lm_head.weight", "output.weight"),
    ];
    if let Some((_, g)) = direct.iter().find(|(h, _)| *h == hf) {
        return g.to_string();
    }
    let rest = hf.strip_prefix("model.layers.").unwrap();
    let (i, rest) = rest.split_once('.').unwrap();
    let map = [
        ("input_layernorm.", "attn_norm."),
        ("post_attention_layernorm.", "ffn_norm."),
        ("self_attn.q_proj.", "attn_q."),
        ("self_attn.k_proj.", "attn_k."),
        ("self_attn.v_proj.", "attn_v."),
        ("self_attn.o_proj.", "attn_output."),
        ("self_attn.q_norm.", "attn_q_norm."),
        ("self_attn.k_norm.", "attn_k_norm."),
        ("mlp.gate_proj.", "ffn_gate."),
        ("mlp.up_proj.", "ffn_up."),
        ("mlp.down_proj.", "ffn_down."),
    ];
    let (from, to) = map.iter().find(|(h, _)| rest.starts_with(h)).unwrap();
    format!("blk.{i}.{to}{}", &rest[from.len()..])
}

/// Writes the same weights as an f32 GGUF (with the tiny byte-level tokenizer).
fn write_gguf(spec: &TinySpec, weights: &[(String, Tensor)], path: &Path) {
    let tensors: Vec<(String, QTensor)> = weights
        .iter()
        .map(|(n, t)| (gguf_name(n), QTensor::quantize(t, GgmlDType::F32).unwrap()))
        .collect();
    let metadata = tiny::metadata(spec);
    let md: Vec<(&str, &_)> = metadata.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let ts: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let mut file = std::fs::File::create(path).unwrap();
    candle_core::quantized::gguf_file::write(&mut file, &md, &ts).unwrap();
}

struct Checkpoint {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    gguf: PathBuf,
}

/// A checkpoint directory (`shards` weight files; one means no index) plus the reference GGUF.
fn checkpoint(spec: &TinySpec, dtype: DType, shards: usize) -> Checkpoint {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tiny-hf");
    std::fs::create_dir(&dir).unwrap();
    let tied = spec.arch == Arch::Qwen3;
    let weights = random_weights(spec, tied, dtype);
    let gguf = tmp.path().join("ref.gguf");
    write_gguf(spec, &weights, &gguf);
    let mut files: Vec<HashMap<String, Tensor>> = vec![HashMap::new(); shards];
    let mut weight_map = serde_json::Map::new();
    for (i, (name, t)) in weights.iter().enumerate() {
        files[i % shards].insert(name.clone(), t.to_dtype(dtype).unwrap());
        weight_map.insert(
            name.clone(),
            json!(format!(
                "model-{:05}-of-{shards:05}.safetensors",
                i % shards + 1
            )),
        );
    }
    if shards == 1 {
        candle_core::safetensors::save(&files[0], dir.join("model.safetensors")).unwrap();
    } else {
        for (k, map) in files.iter().enumerate() {
            let name = format!("model-{:05}-of-{shards:05}.safetensors", k + 1);
            candle_core::safetensors::save(map, dir.join(name)).unwrap();
        }
        let index = json!({ "metadata": {}, "weight_map": weight_map });
        std::fs::write(dir.join("model.safetensors.index.json"), index.to_string()).unwrap();
    }
    let config = json!({
        "architectures": ["X"],
        "model_type": spec.arch.gguf_name(),
        "vocab_size": VOCAB,
        "hidden_size": spec.hidden,
        "intermediate_size": spec.ffn,
        "num_hidden_layers": spec.layers,
        "num_attention_heads": spec.heads,
        "num_key_value_heads": spec.kv_heads,
        "head_dim": spec.head_dim,
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
        "max_position_embeddings": spec.context,
        "tie_word_embeddings": tied,
        "use_sliding_window": false,
        "torch_dtype": format!("{dtype:?}").to_lowercase(),
    });
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    let content = GgufFile::open(&gguf).unwrap().content;
    let tokenizer = TextTokenizer::from_gguf(&content).unwrap();
    tokenizer
        .inner
        .save(dir.join("tokenizer.json"), false)
        .unwrap();
    Checkpoint {
        _tmp: tmp,
        dir,
        gguf,
    }
}

fn load(files: &ModelFiles) -> Model {
    files.load(&Device::Cpu, &mut |_| Ok(())).unwrap()
}

fn prompt(n: usize) -> Vec<u32> {
    (0..n).map(|i| ((i * 37 + 11) % 250) as u32).collect()
}

fn max_diff(a: &Tensor, b: &Tensor) -> f32 {
    let (a, b) = (a.to_vec1::<f32>().unwrap(), b.to_vec1::<f32>().unwrap());
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        // A NaN logit must fail the comparison: `f32::max` alone would pass over it.
        .fold(
            0.0,
            |m: f32, d| if d.is_nan() { f32::INFINITY } else { m.max(d) },
        )
}

fn run(model: &Model, cache: &mut KvCache, tokens: &[u32], chunk: usize) -> Tensor {
    let mut last = None;
    for c in tokens.chunks(chunk) {
        last = Some(model.forward(c, cache).unwrap());
    }
    last.unwrap()
}

#[test]
fn safetensors_logits_equal_the_same_weights_as_gguf() {
    let cases = [
        (TinySpec::qwen2(), DType::F32, 1),
        (TinySpec::qwen2(), DType::BF16, 2),
        (TinySpec::qwen3(), DType::F16, 1),
        (TinySpec::qwen3(), DType::BF16, 3),
    ];
    for (spec, dtype, shards) in cases {
        let ck = checkpoint(&spec, dtype, shards);
        let st = load(&ModelFiles::at(&ck.dir));
        let gg = load(&ModelFiles::at(&ck.gguf));
        // GGUF stores epsilon as f32; the forward pass uses it as f32 either way.
        let same_eps = ModelConfig {
            rms_eps: gg.config().rms_eps,
            ..st.config().clone()
        };
        assert_eq!(&same_eps, gg.config());
        assert_eq!(st.quantization(), format!("{dtype:?}").to_uppercase());
        let tokens = prompt(40);
        let (mut c1, mut c2) = (st.new_cache(), gg.new_cache());
        let a = run(&st, &mut c1, &tokens, 40);
        let b = run(&gg, &mut c2, &tokens, 40);
        let diff = max_diff(&a, &b);
        assert!(
            diff < 1e-4,
            "{:?} {dtype:?}: prefill diff {diff}",
            spec.arch
        );
        for t in [5u32, 77, 200] {
            let diff = max_diff(
                &st.forward(&[t], &mut c1).unwrap(),
                &gg.forward(&[t], &mut c2).unwrap(),
            );
            assert!(diff < 1e-4, "{:?} {dtype:?}: decode diff {diff}", spec.arch);
        }
    }
}

#[test]
fn safetensors_chunked_prefill_equals_single_pass() {
    for spec in [TinySpec::qwen2(), TinySpec::qwen3()] {
        let ck = checkpoint(&spec, DType::BF16, 1);
        let model = load(&ModelFiles::at(&ck.dir));
        let tokens = prompt(100);
        let reference = run(&model, &mut model.new_cache(), &tokens, 100);
        for chunk in [1, 3, 7, 64] {
            let got = run(&model, &mut model.new_cache(), &tokens, chunk);
            let diff = max_diff(&reference, &got);
            assert!(diff < 1e-3, "{:?} chunk {chunk}: diff {diff}", spec.arch);
        }
        // Prefill after decode steps: 20 tokens, 3 single steps, the rest in one chunk.
        let mut cache = model.new_cache();
        run(&model, &mut cache, &tokens[..20], 20);
        for t in &tokens[20..23] {
            model.forward(&[*t], &mut cache).unwrap();
        }
        let got = run(&model, &mut cache, &tokens[23..], 77);
        assert!(max_diff(&reference, &got) < 1e-3, "{:?}", spec.arch);
    }
}

fn load_err(dir: &Path) -> EngineError {
    match ModelFiles::at(dir).load(&Device::Cpu, &mut |_| Ok(())) {
        Ok(_) => panic!("loaded a broken checkpoint"),
        Err(e) => e,
    }
}

fn assert_names(err: &EngineError, file: &str, message: &str) {
    let EngineError::Load { path, message: m } = err else {
        panic!("expected a Load error, got {err:?}");
    };
    assert!(path.ends_with(file), "{path} should name {file}");
    assert!(m.contains(message), "{m:?} should say {message:?}");
}

#[test]
fn bad_or_missing_files_are_load_errors_naming_the_file() {
    let ck = checkpoint(&TinySpec::qwen2(), DType::F32, 2);
    let dir = &ck.dir;
    let shard = dir.join("model-00002-of-00002.safetensors");
    let bytes = std::fs::read(&shard).unwrap();

    std::fs::write(&shard, &bytes[..bytes.len() / 2]).unwrap();
    assert_names(&load_err(dir), "model-00002-of-00002.safetensors", "");
    std::fs::remove_file(&shard).unwrap();
    assert_names(
        &load_err(dir),
        "model-00002-of-00002.safetensors",
        "missing",
    );
    std::fs::write(&shard, &bytes).unwrap();

    let index = dir.join("model.safetensors.index.json");
    let index_text = std::fs::read_to_string(&index).unwrap();
    std::fs::write(&index, "{ not json").unwrap();
    assert_names(&load_err(dir), "model.safetensors.index.json", "");
    std::fs::write(&index, &index_text).unwrap();

    let config = dir.join("config.json");
    let config_text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, config_text.replace("\"qwen2\"", "\"mamba\"")).unwrap();
    assert_names(
        &load_err(dir),
        "config.json",
        "unsupported model_type `mamba`",
    );
    std::fs::write(
        &config,
        config_text.replace("\"head_dim\":16", "\"head_dim\":8"),
    )
    .unwrap();
    assert_names(
        &load_err(dir),
        ".safetensors",
        "has shape [64, 64], expected [32, 64]",
    );
    std::fs::remove_file(&config).unwrap();
    assert_names(&load_err(dir), "config.json", "");
    std::fs::write(&config, &config_text).unwrap();

    // A tensor the index does not route anywhere is simply absent.
    let mut map: serde_json::Value = serde_json::from_str(&index_text).unwrap();
    let wm = map["weight_map"].as_object_mut().unwrap();
    wm.retain(|_, file| file == "model-00001-of-00002.safetensors");
    std::fs::write(&index, map.to_string()).unwrap();
    let err = load_err(dir);
    assert_names(&err, "tiny-hf", "missing tensor `");
    std::fs::write(&index, &index_text).unwrap();

    std::fs::remove_file(dir.join("tokenizer.json")).unwrap();
    let header = ModelFiles::at(dir).header();
    assert_names(&header.err().unwrap(), "tokenizer.json", "");
    assert!(load(&ModelFiles::at(dir)).config().num_layers == 2);
}

#[test]
fn the_engine_serves_a_safetensors_directory() {
    let ck = checkpoint(&TinySpec::qwen3(), DType::BF16, 1);
    let engine = Engine::spawn(EngineConfig::new(&ck.dir)).unwrap();
    assert_eq!(engine.wait_ready(Duration::from_secs(30)), Health::Healthy);
    assert_eq!(engine.summary().id, "tiny-hf");
    assert_eq!(engine.summary().quantization, "BF16");
    assert_eq!(engine.summary().arch, Arch::Qwen3);
    let mut req = GenerateRequest::new(
        Prompt::Text("<|im_start|>user\nhi<|im_end|>\n".into()),
        SamplingParams::greedy(),
    );
    req.max_tokens = Some(5);
    let mut rx = engine.submit(req);
    let mut events = Vec::new();
    while let Some(ev) = rx.blocking_recv() {
        events.push(ev);
    }
    assert!(
        matches!(events.last(), Some(EngineEvent::Done(_))),
        "{events:?}"
    );
}

use candle_core::Device;
use candle_core::quantized::GgmlDType;

use super::cpu_memory::f32_bits;
use super::tiny::{self, TinySpec, VOCAB};
use super::*;
use crate::error::EngineError;

fn load(spec: &TinySpec) -> (Model, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = tiny::write(spec, dir.path(), "m");
    let mut file = GgufFile::open(&path).unwrap();
    let model = file.load_model(&Device::Cpu, &mut |_| Ok(())).unwrap();
    (model, dir)
}

fn prompt(n: usize) -> Vec<u32> {
    (0..n).map(|i| ((i * 37 + 11) % 250) as u32).collect()
}

fn logits_vec(t: &candle_core::Tensor) -> Vec<f32> {
    t.to_vec1::<f32>().unwrap()
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        // A NaN logit must fail the comparison: `f32::max` alone would pass over it.
        .fold(
            0.0,
            |m: f32, d| if d.is_nan() { f32::INFINITY } else { m.max(d) },
        )
}

/// Runs `tokens` in chunks of `chunk` and returns the last logits.
fn chunked(model: &Model, cache: &mut KvCache, tokens: &[u32], chunk: usize) -> Vec<f32> {
    let mut last = None;
    for c in tokens.chunks(chunk) {
        last = Some(model.forward(c, cache).unwrap());
    }
    logits_vec(&last.unwrap())
}

/// Two prompts that share their first `shared` tokens: `prompt(len)`, and the shared part
/// followed by `tail`; with the second's last logits from a fresh cache.
fn branch(
    model: &Model,
    len: usize,
    shared: usize,
    tail: &[u32],
) -> (Vec<u32>, Vec<u32>, Vec<f32>) {
    let a = prompt(len);
    let b = [&a[..shared], tail].concat();
    let mut fresh = model.new_cache();
    let reference = chunked(model, &mut fresh, &b, 256);
    (a, b, reference)
}

fn specs() -> Vec<TinySpec> {
    let f32_qwen2 = TinySpec {
        weights: GgmlDType::F32,
        ..TinySpec::qwen2()
    };
    vec![
        TinySpec::qwen2(),
        f32_qwen2,
        TinySpec::qwen3(),
        TinySpec::llama(),
    ]
}

#[test]
fn chunked_prefill_equals_single_pass_for_every_chunk_size() {
    for spec in specs() {
        let (model, _dir) = load(&spec);
        let tokens = prompt(100);
        let mut cache = model.new_cache();
        let reference = chunked(&model, &mut cache, &tokens, tokens.len());
        assert_eq!(cache.len(), 100);
        for chunk in [1, 3, 7, 64] {
            let mut cache = model.new_cache();
            let got = chunked(&model, &mut cache, &tokens, chunk);
            let diff = max_diff(&reference, &got);
            assert!(diff < 1e-3, "{:?} chunk {chunk}: diff {diff}", spec.arch);
        }
    }
}

/// A chunk's last layer runs its last token alone (`Rows::Last`): its logits are the same bits
/// as that token's decoded after the rest of the chunk, on the packed CPU kernels (whose prompt
/// rows are their decoded rows, bit for bit), and within rounding on candle's F32 matmuls.
#[test]
fn a_chunk_s_last_logits_are_its_last_token_decoded() {
    for spec in specs() {
        let (model, _dir) = load(&spec);
        let tokens = prompt(90);
        let mut whole = model.new_cache();
        let chunk = model.forward(&tokens, &mut whole).unwrap();
        let mut split = model.new_cache();
        model.forward(&tokens[..89], &mut split).unwrap();
        let decoded = model.forward(&tokens[89..], &mut split).unwrap();
        if spec.weights == GgmlDType::F32 {
            let diff = max_diff(&logits_vec(&chunk), &logits_vec(&decoded));
            assert!(diff < 1e-4, "{:?}, F32: diff {diff}", spec.arch);
        } else {
            assert!(f32_bits(&chunk) == f32_bits(&decoded), "{:?}", spec.arch);
        }
        assert_eq!((whole.len(), split.len()), (90, 90));
    }
}

/// A chunk run by `prefill` (no logits, the last layer stopping at its keys and values)
/// leaves the cache as `forward` does: what follows it gets the same logits, to the bit. Bad
/// input is refused as `forward` refuses it, the cache unchanged.
#[test]
fn a_prefilled_chunk_fills_the_cache_as_a_forward_pass_does() {
    for spec in specs() {
        let (model, _dir) = load(&spec);
        let tokens = prompt(90);
        let mut forwarded = model.new_cache();
        model.forward(&tokens[..61], &mut forwarded).unwrap();
        let want = model.forward(&tokens[61..], &mut forwarded).unwrap();
        let mut prefilled = model.new_cache();
        model.prefill(&tokens[..1], &mut prefilled).unwrap();
        model.prefill(&tokens[1..61], &mut prefilled).unwrap();
        assert_eq!(prefilled.len(), 61);
        let got = model.forward(&tokens[61..], &mut prefilled).unwrap();
        assert!(f32_bits(&got) == f32_bits(&want), "{:?}", spec.arch);
        assert!(model.prefill(&[], &mut prefilled).is_err());
        assert!(matches!(
            model.prefill(&[1, VOCAB as u32], &mut prefilled),
            Err(EngineError::TokenOutOfRange { .. })
        ));
        assert_eq!(prefilled.len(), 90);
    }
}

#[test]
fn prefill_after_decode_steps_matches_single_pass() {
    // candle 0.11.1's quantized_qwen3 gets exactly this wrong (docs/inference.md §2.1).
    for spec in specs() {
        let (model, _dir) = load(&spec);
        let tokens = prompt(60);
        let mut cache = model.new_cache();
        let reference = chunked(&model, &mut cache, &tokens, 60);
        let mut cache = model.new_cache();
        model.forward(&tokens[..20], &mut cache).unwrap();
        for t in &tokens[20..23] {
            model.forward(std::slice::from_ref(t), &mut cache).unwrap();
        }
        let got = chunked(&model, &mut cache, &tokens[23..], 13);
        let diff = max_diff(&reference, &got);
        assert!(diff < 1e-3, "{:?}: diff {diff}", spec.arch);
    }
}

#[test]
fn truncate_and_reprefill_equals_fresh_prefill() {
    let (model, _dir) = load(&TinySpec::qwen3());
    let tail: Vec<u32> = (0..30).map(|i| (i * 5 + 3) as u32).collect();
    let (a, b, reference) = branch(&model, 80, 50, &tail);
    let mut cache = model.new_cache();
    chunked(&model, &mut cache, &a, 16);
    cache.truncate(50).unwrap();
    let got = chunked(&model, &mut cache, &b[50..], 16);
    assert!(max_diff(&reference, &got) < 1e-3);
    assert_eq!(cache.len(), 80);
    cache.reset();
    assert!(cache.is_empty());
    assert_eq!(cache.allocated_bytes(), 0);
    let again = chunked(&model, &mut cache, &b, 256);
    assert!(max_diff(&reference, &again) < 1e-5);
}

#[test]
fn cache_grows_past_its_first_allocation() {
    let spec = TinySpec {
        context: 1024,
        ..TinySpec::qwen2()
    };
    let (model, _dir) = load(&spec);
    let tokens = prompt(600); // beyond the 256-token first allocation, twice
    let mut one = model.new_cache();
    let reference = chunked(&model, &mut one, &tokens, 600);
    let mut grown = model.new_cache();
    let got = chunked(&model, &mut grown, &tokens, 100);
    assert!(max_diff(&reference, &got) < 1e-3);
}

/// A fork copies its prefix in whole key blocks (`kv_layout.rs`): the keys past the prefix
/// in its last block come from the source's later tokens until the fork's own overwrite them,
/// and must never be attended to.
#[test]
fn a_forked_prefix_continues_as_a_fresh_cache_would() {
    let (model, _dir) = load(&TinySpec::qwen2());
    let tail: Vec<u32> = (0..40).map(|i| (i * 7 + 2) as u32).collect();
    let (a, b, reference) = branch(&model, 150, 70, &tail);
    let mut source = model.new_cache();
    chunked(&model, &mut source, &a, 256);
    let mut fork = source.fork_prefix(70).unwrap();
    let got = chunked(&model, &mut fork, &b[70..], 16);
    assert!(max_diff(&reference, &got) < 1e-3);
    assert_eq!(fork.len(), 110);
    assert_eq!(source.len(), 150, "the source is untouched");
}

#[test]
fn bad_ids_positions_and_overflow_are_errors_that_keep_the_cache() {
    let (model, _dir) = load(&TinySpec::qwen2());
    let mut cache = model.new_cache();
    model.forward(&prompt(10), &mut cache).unwrap();
    let bad_id = model.forward(&[1, VOCAB as u32], &mut cache);
    assert!(matches!(bad_id, Err(EngineError::TokenOutOfRange { id, .. }) if id == VOCAB as u32));
    assert!(matches!(
        model.forward(&[], &mut cache),
        Err(EngineError::InvalidRequest(_))
    ));
    assert!(matches!(
        cache.truncate(11),
        Err(EngineError::BadPosition {
            position: 11,
            len: 10
        })
    ));
    let overflow = model.forward(&prompt(503), &mut cache);
    assert!(matches!(
        overflow,
        Err(EngineError::ContextOverflow {
            needed: 513,
            limit: 512
        })
    ));
    assert_eq!(cache.len(), 10);
    // The cache still works after the errors.
    model.forward(&[5], &mut cache).unwrap();
    assert_eq!(cache.len(), 11);
}

#[test]
fn config_and_labels_come_from_metadata() {
    let (model, _dir) = load(&TinySpec::qwen3());
    let c = model.config();
    assert_eq!(
        (c.arch, c.num_layers, c.head_dim, c.vocab_size),
        (Arch::Qwen3, 2, 32, VOCAB)
    );
    assert_eq!(model.quantization(), "Q8_0");
    assert!(model.weight_bytes_per_token() > 0);
}

/// A table of its own (the head is untied) stays in the file, and the rows read from there are
/// the ones candle reads from the table itself, bit for bit, for a quantized and an f32 file.
#[test]
fn an_untied_embedding_table_is_read_from_the_file_row_by_row() {
    let f32_qwen2 = TinySpec {
        weights: GgmlDType::F32,
        ..TinySpec::qwen2()
    };
    for spec in [TinySpec::qwen2(), f32_qwen2, TinySpec::llama()] {
        let dir = tempfile::tempdir().unwrap();
        let path = tiny::write(&spec, dir.path(), "m");
        let mut file = GgufFile::open(&path).unwrap();
        let model = file.load_model(&Device::Cpu, &mut |_| Ok(())).unwrap();
        let transformer::Embedding::OnDisk(rows) = &model.embed else {
            panic!("{:?}: the table was read into memory", spec.weights);
        };
        let ids = [0u32, 1, 200, 7, 7, VOCAB as u32 - 1];
        let got = rows.rows(&ids, &Device::Cpu).unwrap();
        let table = candle_core::quantized::QMatMul::from_qtensor(
            file.tensor("token_embd.weight").unwrap(),
        )
        .unwrap();
        let ids_t = candle_core::Tensor::new(&ids[..], &Device::Cpu).unwrap();
        let want = table.embedding(&ids_t).unwrap();
        assert_eq!(got.dims(), want.dims());
        let diff = (got - want).unwrap().abs().unwrap().max_all().unwrap();
        assert_eq!(diff.to_scalar::<f32>().unwrap(), 0.0, "{:?}", spec.weights);
        assert!(matches!(
            rows.rows(&[VOCAB as u32], &Device::Cpu),
            Err(EngineError::TokenOutOfRange { .. })
        ));
    }
}

/// A model file cut short under a loaded model: the rows it can no longer read are an error
/// that names the file and poisons the model (a reload checks the file again); the cache is
/// left as it was.
#[test]
fn a_model_file_cut_short_while_loaded_is_a_device_class_read_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = tiny::write(&TinySpec::qwen2(), dir.path(), "m");
    let mut file = GgufFile::open(&path).unwrap();
    let model = file.load_model(&Device::Cpu, &mut |_| Ok(())).unwrap();
    let mut cache = model.new_cache();
    model.forward(&prompt(5), &mut cache).unwrap();
    let data_start = file.content.tensor_data_offset;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(data_start)
        .unwrap();
    let err = model.forward(&[3], &mut cache).unwrap_err();
    assert!(
        matches!(&err, EngineError::ModelFileRead { path: p, .. } if p.ends_with("m.gguf")),
        "{err}"
    );
    assert_eq!(err.class(), crate::fault::FaultClass::Device);
    assert_eq!(cache.len(), 5);
}

/// The engine reserves a prompt's tokens with room after them; the room is made only when the
/// cache has to grow anyway, and never past the context.
#[test]
fn room_after_a_prompt_is_made_only_when_the_cache_grows() {
    let spec = TinySpec {
        context: 1024,
        ..TinySpec::qwen2()
    };
    let (model, _dir) = load(&spec);
    let per_token = model.kv_bytes_per_token();
    let mut cache = model.new_cache();
    cache.reserve_with_room(300, 200).unwrap();
    // 500 tokens, rounded up to whole key blocks (`kv_layout.rs`).
    assert_eq!(cache.allocated_bytes(), 512 * per_token);
    cache.reserve_with_room(150, 2000).unwrap();
    assert_eq!(
        cache.allocated_bytes(),
        512 * per_token,
        "it fits: no growth"
    );
    cache.reserve_with_room(600, 2000).unwrap();
    assert_eq!(
        cache.allocated_bytes(),
        1024 * per_token,
        "room stops at the context"
    );
    assert!(matches!(
        cache.reserve_with_room(1025, 0),
        Err(EngineError::ContextOverflow { needed: 1025, .. })
    ));
    // The budget counts held tokens, not the room.
    assert_eq!(cache.held_bytes(), 0);
    model.forward(&prompt(10), &mut cache).unwrap();
    assert_eq!(cache.held_bytes(), 10 * per_token);
}

/// `packs_whole_on_this_cpu` says what loading does: true where every linear layer the model
/// loads is packed, false where any stays on candle (a format without a kernel, or a CPU
/// without the kernels; shapes that are not whole tiles are `packs_here`'s test). The tied
/// head of Qwen3's shape counts too.
#[test]
fn packs_whole_foretells_the_loaded_kernels() {
    let k_quant = TinySpec {
        weights: GgmlDType::Q4K,
        hidden: 256,
        heads: 4,
        head_dim: 64,
        ffn: 256,
        ..TinySpec::qwen2()
    };
    let specs = [
        ("q8_0", TinySpec::qwen2()),
        ("tied", TinySpec::qwen3()),
        ("q4_k", k_quant),
        (
            "f32",
            TinySpec {
                weights: GgmlDType::F32,
                ..TinySpec::qwen2()
            },
        ),
    ];
    for (name, spec) in specs {
        let dir = tempfile::tempdir().unwrap();
        let path = tiny::write(&spec, dir.path(), name);
        let mut file = GgufFile::open(&path).unwrap();
        let packs = file.packs_whole_on_this_cpu();
        let model = file.load_model(&Device::Cpu, &mut |_| Ok(())).unwrap();
        let kernels = model.kernels();
        let all_packed = kernels.iter().all(|(k, _)| !k.starts_with("candle"));
        assert_eq!(packs, all_packed, "{name}: {kernels:?}");
        let expected = hearth_kernels::Isa::detect().is_some() && name != "f32";
        assert_eq!(packs, expected, "{name}: {kernels:?}");
    }
}

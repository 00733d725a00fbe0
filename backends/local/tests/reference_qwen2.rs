//! Cross-checks the engine's Qwen2 forward pass against candle-transformers'
//! `quantized_qwen2` (correct for plain prefill, per notes/inference.md §2.2) on a real model.
//! Skipped unless `HEARTH_TEST_MODEL` names a Qwen2 GGUF.

// A test binary: panics are the failures.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_qwen2::ModelWeights;
use hearth_local::GgufFile;

#[test]
fn logits_match_candle_reference_on_the_real_model() {
    let Ok(path) = std::env::var("HEARTH_TEST_MODEL") else {
        eprintln!("skipped: set HEARTH_TEST_MODEL to a Qwen2 GGUF to run");
        return;
    };
    let mut file = GgufFile::open(path.as_ref()).unwrap();
    let ours = file.load_model(&Device::Cpu, &mut |_| Ok(())).unwrap();
    let mut reader = std::fs::File::open(&path).unwrap();
    let content = candle_core::quantized::gguf_file::Content::read(&mut reader).unwrap();
    let mut reference = ModelWeights::from_gguf(content, &mut reader, &Device::Cpu).unwrap();
    let tokens: Vec<u32> = (0..40).map(|i| 1000 + i * 37).collect();
    let want = reference
        .forward(
            &Tensor::new(tokens.as_slice(), &Device::Cpu)
                .unwrap()
                .unsqueeze(0)
                .unwrap(),
            0,
        )
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1::<f32>()
        .unwrap();
    let got = ours
        .forward(&tokens, &mut ours.new_cache())
        .unwrap()
        .to_vec1::<f32>()
        .unwrap();
    let diff = want
        .iter()
        .zip(&got)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f32::max);
    let scale = want.iter().map(|a| a.abs()).fold(0.0, f32::max);
    eprintln!("max abs diff {diff} (logits up to {scale})");
    assert!(diff < 1e-2 * scale, "diff {diff}");
    let argmax = |v: &[f32]| hearth_local::sampler::argmax(v);
    assert_eq!(argmax(&want), argmax(&got));
}

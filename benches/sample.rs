//! One decoded token's sampling over Qwen2.5's vocabulary of 151,936 logits: greedy, the
//! default draw (temperature 0.7, top-k 20, top-p 0.8, repeat penalty over 64 tokens) and the
//! draw under a grammar (the best 64 looked through). It runs on one thread while the rest of
//! the engine waits, once per token.

use criterion::{Criterion, criterion_group, criterion_main};
use hearth_local::sampler::{Sampler, SamplingParams};
use std::hint::black_box;

const VOCAB: usize = 151_936;

/// Logits spread as a model's are: most within a few units of each other, a handful well
/// above (the likely next tokens).
fn logits() -> Vec<f32> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut uniform = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32
    };
    (0..VOCAB)
        .map(|i| {
            let spread: f32 = (0..4).map(|_| uniform()).sum::<f32>() * 3.0 - 6.0;
            if i % 9973 == 0 { spread + 14.0 } else { spread }
        })
        .collect()
}

fn sampling(c: &mut Criterion) {
    let logits = logits();
    let history: Vec<u32> = (0..64).map(|i| i * 997).collect();
    let mut group = c.benchmark_group("sample one token of 151936");
    let cases = [
        ("greedy", SamplingParams::greedy()),
        ("default", SamplingParams::default()),
    ];
    for (name, params) in cases {
        let mut sampler = Sampler::new(params);
        let mut values = logits.clone();
        group.bench_function(name, |b| {
            b.iter(|| {
                values.copy_from_slice(&logits);
                black_box(sampler.sample(&mut values, &history))
            })
        });
    }
    let mut sampler = Sampler::new(SamplingParams::default());
    let mut values = logits.clone();
    group.bench_function("default, under a grammar", |b| {
        b.iter(|| {
            values.copy_from_slice(&logits);
            black_box(sampler.sample_constrained(&mut values, &history, &|id| id % 2 == 0))
        })
    });
    group.finish();
}

criterion_group!(benches, sampling);
criterion_main!(benches);

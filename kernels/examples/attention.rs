//! Prints how long one decoded token's attention takes at a few depths, on one thread and on
//! the whole pool, for the head layouts of common models, so the spread of decode attention
//! over the cores can be seen apart from the rest of a forward pass; then one prefill chunk's
//! attention at a few depths, with the multiply-adds per second it reached:
//!   cargo run --release -p hearth-kernels --example attention [threads] [decode|prefill]
//! Threads default to the rayon pool's (`RAYON_NUM_THREADS`); both parts run by default. A layout with fewer KV heads than
//! threads only speeds up on more threads if the key range is split between them.

use std::time::{Duration, Instant};

use hearth_kernels::{AttentionShape, ShapeError, causal_attention};

/// (name, query heads, KV heads, head size).
const LAYOUTS: [(&str, usize, usize, usize); 3] = [
    ("Qwen2.5-0.5B 14/2x64", 14, 2, 64),
    ("Qwen2.5-1.5B 12/2x128", 12, 2, 128),
    ("one KV head 8/1x128", 8, 1, 128),
];

const DEPTHS: [usize; 3] = [1024, 4096, 16384];

/// Layers whose caches a decode step reads one after another (Qwen2.5-0.5B has 24): together
/// they outgrow the caches, as in a forward pass.
const LAYERS: usize = 24;

/// Query rows of one prefill chunk: the engine's default on the CPU.
const CHUNK: usize = 256;
const PREFILL_DEPTHS: [usize; 3] = [0, 1024, 4096];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let threads = std::env::args()
        .nth(1)
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(rayon::current_num_threads);
    let part = std::env::args().nth(2).unwrap_or_default();
    let all = pool(threads)?;
    if part != "prefill" {
        decode(&pool(1)?, &all, threads)?;
    }
    if part != "decode" {
        prefill(&all, threads)?;
    }
    Ok(())
}

fn decode(
    single: &rayon::ThreadPool,
    all: &rayon::ThreadPool,
    threads: usize,
) -> Result<(), ShapeError> {
    println!(
        "decode attention, microseconds per token and layer (1 thread / {threads} threads = \
         speedup; then {threads} threads with the KV of {LAYERS} layers, read from memory \
         as a forward pass reads it)"
    );
    for (name, heads, kv_heads, head_dim) in LAYOUTS {
        for depth in DEPTHS {
            let shape = shape_of((heads, kv_heads, head_dim), 1, depth);
            let cache = kv_heads * shape.capacity * head_dim;
            let q = filled(heads * head_dim, 1);
            let layers: Vec<(Vec<f32>, Vec<f32>)> = (0..LAYERS as u64)
                .map(|l| (filled(cache, 2 + 2 * l), filled(cache, 3 + 2 * l)))
                .collect();
            let (k, v) = &layers[0];
            let mut out = vec![0f32; heads * head_dim];
            let mut time = |pool: &rayon::ThreadPool| {
                per_call(|| pool.install(|| causal_attention(&q, k, v, shape, &mut out)))
            };
            let (one, many) = (time(single)?, time(all)?);
            let mut out = vec![0f32; heads * head_dim];
            let cold = per_call(|| {
                all.install(|| {
                    layers
                        .iter()
                        .try_for_each(|(k, v)| causal_attention(&q, k, v, shape, &mut out))
                })
            })? / LAYERS as u32;
            let bytes = (2 * cache * std::mem::size_of::<f32>()) as f64;
            println!(
                "{name:<24} depth {depth:>5}: {:>8.1} / {:>8.1} = {:.2}x, cold {:>8.1} ({:.1} GB/s)",
                micros(one),
                micros(many),
                one.as_secs_f64() / many.as_secs_f64(),
                micros(cold),
                bytes / cold.as_secs_f64() / 1e9
            );
        }
    }
    Ok(())
}

fn prefill(all: &rayon::ThreadPool, threads: usize) -> Result<(), ShapeError> {
    println!("prefill attention, {CHUNK} new tokens, milliseconds per chunk on {threads} threads");
    for (name, heads, kv_heads, head_dim) in LAYOUTS {
        for depth in PREFILL_DEPTHS {
            let shape = shape_of((heads, kv_heads, head_dim), CHUNK, depth);
            let cache = kv_heads * shape.capacity * head_dim;
            let q = filled(heads * CHUNK * head_dim, 1);
            let (k, v) = (filled(cache, 2), filled(cache, 3));
            let mut out = vec![0f32; CHUNK * heads * head_dim];
            let took = per_call(|| all.install(|| causal_attention(&q, &k, &v, shape, &mut out)))?;
            // Query row i reads keys 0..=depth + i: one multiply-add per dim for its score
            // and one for its value, per query head.
            let keys: usize = (0..CHUNK).map(|i| depth + i + 1).sum();
            let macs = (heads * keys * head_dim * 2) as f64;
            println!(
                "{name:<24} depth {depth:>5}: {:>8.2} ms, {:>6.1} GMAC/s",
                took.as_secs_f64() * 1e3,
                macs / took.as_secs_f64() / 1e9
            );
        }
    }
    Ok(())
}

/// `queries` new tokens after `depth` cached ones, in a cache just large enough to hold them.
fn shape_of(
    (heads, kv_heads, head_dim): (usize, usize, usize),
    queries: usize,
    depth: usize,
) -> AttentionShape {
    AttentionShape {
        heads,
        kv_heads,
        head_dim,
        queries,
        offset: depth,
        capacity: depth + queries,
    }
}

fn pool(threads: usize) -> Result<rayon::ThreadPool, rayon::ThreadPoolBuildError> {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build()
}

/// Values in [-1, 1) from a fixed generator, so runs compare.
fn filled(n: usize, seed: u64) -> Vec<f32> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// The best of several timed batches, each long enough to swamp the clock's resolution.
fn per_call(mut call: impl FnMut() -> Result<(), ShapeError>) -> Result<Duration, ShapeError> {
    call()?;
    let mut best = Duration::MAX;
    for _ in 0..5 {
        let start = Instant::now();
        let mut calls = 0u32;
        while start.elapsed() < Duration::from_millis(100) {
            call()?;
            calls += 1;
        }
        best = best.min(start.elapsed() / calls);
    }
    Ok(best)
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

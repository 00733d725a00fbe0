//! Prints how long one decoded token's attention takes at a few depths, on one thread and on
//! the whole pool, for the head layouts of common models, so the spread of decode attention
//! over the cores can be seen apart from the rest of a forward pass; then one prefill chunk's
//! attention at a few depths, with the multiply-adds per second it reached:
//!   cargo run --release -p hearth-kernels --example attention [threads] [decode|prefill|both] [f16|f32]
//! Threads default to the rayon pool's (`RAYON_NUM_THREADS`); both parts run by default, on an
//! f16 cache (what the engine holds on the CPU). A layout with fewer KV heads than threads only
//! speeds up on more threads if the key range is split between them.

use std::time::{Duration, Instant};

use half::f16;
use hearth_kernels::{AttentionShape, KEY_BLOCK, KvElement, ShapeError, causal_attention};

/// (name, query heads, KV heads, head size).
const LAYOUTS: [(&str, usize, usize, usize); 4] = [
    ("Qwen2.5-0.5B 14/2x64", 14, 2, 64),
    ("Qwen2.5-1.5B 12/2x128", 12, 2, 128),
    ("Qwen2.5-14B 40/8x128", 40, 8, 128),
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
    match std::env::args().nth(3).as_deref() {
        Some("f32") => run(&part, &all, threads, |x| x),
        Some("f16") | None => run(&part, &all, threads, f16::from_f32),
        Some(other) => Err(format!("cache type {other:?}: f16 or f32").into()),
    }
}

fn run<E: KvElement>(
    part: &str,
    all: &rayon::ThreadPool,
    threads: usize,
    held: fn(f32) -> E,
) -> Result<(), Box<dyn std::error::Error>> {
    if part != "prefill" {
        decode(&pool(1)?, all, threads, held)?;
    }
    if part != "decode" {
        prefill(all, threads, held)?;
    }
    Ok(())
}

fn decode<E: KvElement>(
    single: &rayon::ThreadPool,
    all: &rayon::ThreadPool,
    threads: usize,
    held: fn(f32) -> E,
) -> Result<(), ShapeError> {
    println!(
        "decode attention on a cache of {}, microseconds per token and layer (1 thread / \
         {threads} threads = speedup; then {threads} threads with the KV of {LAYERS} layers, \
         read from memory as a forward pass reads it)",
        cache_name::<E>()
    );
    for (name, heads, kv_heads, head_dim) in LAYOUTS {
        for depth in DEPTHS {
            let shape = shape_of((heads, kv_heads, head_dim), 1, depth);
            let cache = kv_heads * shape.capacity * head_dim;
            let q = filled(heads * head_dim, 1);
            let layers: Vec<(Vec<E>, Vec<E>)> = (0..LAYERS as u64)
                .map(|l| {
                    let (k, v) = (filled(cache, 2 + 2 * l), filled(cache, 3 + 2 * l));
                    (
                        k.into_iter().map(held).collect(),
                        v.into_iter().map(held).collect(),
                    )
                })
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
            let bytes = (2 * cache * std::mem::size_of::<E>()) as f64;
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

fn prefill<E: KvElement>(
    all: &rayon::ThreadPool,
    threads: usize,
    held: fn(f32) -> E,
) -> Result<(), ShapeError> {
    println!(
        "prefill attention on a cache of {}, {CHUNK} new tokens, milliseconds per chunk on \
         {threads} threads",
        cache_name::<E>()
    );
    for (name, heads, kv_heads, head_dim) in LAYOUTS {
        for depth in PREFILL_DEPTHS {
            let shape = shape_of((heads, kv_heads, head_dim), CHUNK, depth);
            let cache = kv_heads * shape.capacity * head_dim;
            let q = filled(heads * CHUNK * head_dim, 1);
            let k: Vec<E> = filled(cache, 2).into_iter().map(held).collect();
            let v: Vec<E> = filled(cache, 3).into_iter().map(held).collect();
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

/// `queries` new tokens after `depth` cached ones, in a cache just large enough to hold them
/// (in whole key blocks). The keys are random, so their layout does not matter here.
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
        capacity: (depth + queries).next_multiple_of(KEY_BLOCK),
    }
}

/// The cache's element type, by its size (f16 and f32 are the two there are).
fn cache_name<E>() -> &'static str {
    match std::mem::size_of::<E>() {
        2 => "f16",
        _ => "f32",
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

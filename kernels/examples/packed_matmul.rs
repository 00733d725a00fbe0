//! Prints the packed Q8_0, Q4_0 and Q5_0 matmuls' speed on the shapes of Qwen2.5-0.5B's layers, and
//! the Q4_K and Q6_K ones on the shapes of Q4_K_M files whose rows are multiples of 256 (the
//! 0.5B's MLP down projection and the 1.5B's layers), for one token (decode) and for a
//! prefill chunk of 256, so kernel changes can be compared in isolation:
//!   cargo run --release -p hearth-kernels --example packed_matmul [threads]
//! Threads default to the rayon pool's (`RAYON_NUM_THREADS`).

use std::time::{Duration, Instant};

use hearth_kernels::{Isa, PackedQ4_0, PackedQ4_K, PackedQ5_0, PackedQ6_K, PackedQ8_0};

/// (name, output rows, input columns): attention q/o, k/v, the MLP's gate/up and down.
const SHAPES: [(&str, usize, usize); 4] = [
    ("q/o 896x896", 896, 896),
    ("k/v 128x896", 128, 896),
    ("gate/up 4864x896", 4864, 896),
    ("down 896x4864", 896, 4864),
];

/// K-quant shapes: Qwen2.5-0.5B's MLP down projection (its only K-quant tensors in Q4_K_M, the
/// 896-wide ones being Q5_0 or Q8_0 there), then Qwen2.5-1.5B's q/o, gate/up and down.
const K_SHAPES: [(&str, usize, usize); 4] = [
    ("0.5B down 896x4864", 896, 4864),
    ("q/o 1536x1536", 1536, 1536),
    ("gate/up 8960x1536", 8960, 1536),
    ("down 1536x8960", 1536, 8960),
];

fn main() {
    let threads = std::env::args()
        .nth(1)
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(rayon::current_num_threads);
    let Some(isa) = Isa::detect() else {
        eprintln!("this CPU has neither AVX-512 VNNI nor AVX2");
        std::process::exit(1);
    };
    println!("Q8_0 kernel {isa:?}, Q4_0 and Q5_0 kernels Avx2, {threads} threads");
    println!(
        "{:<18} {:>5} {:>10} {:>9} {:>10} {:>9} {:>10} {:>9}",
        "shape", "m", "Q8_0 ms", "GMAC/s", "Q4_0 ms", "GMAC/s", "Q5_0 ms", "GMAC/s"
    );
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for (name, rows, cols) in SHAPES {
        let blocks = rows * cols / 32;
        let mut q8 = Vec::with_capacity(blocks * 34);
        let mut q4 = Vec::with_capacity(blocks * 18);
        let mut q5 = Vec::with_capacity(blocks * 22);
        for _ in 0..blocks {
            let scale = half::f16::from_f32(0.01).to_le_bytes();
            q8.extend_from_slice(&scale);
            q8.extend((0..32).map(|_| next() as u8));
            q4.extend_from_slice(&scale);
            q4.extend((0..16).map(|_| next() as u8));
            q5.extend_from_slice(&scale);
            q5.extend((0..20).map(|_| next() as u8));
        }
        let (Ok(q8), Ok(q4), Ok(q5)) = (
            PackedQ8_0::pack_for(isa, &q8, rows, cols),
            PackedQ4_0::pack(&q4, rows, cols),
            PackedQ5_0::pack(&q5, rows, cols),
        ) else {
            eprintln!("{name}: cannot pack");
            continue;
        };
        for m in [1, 256] {
            let lhs: Vec<f32> = (0..m * cols)
                .map(|_| (next() % 2000) as f32 / 1000.0 - 1.0)
                .collect();
            let mut out = vec![0f32; m * rows];
            let q8_time = best_time(|| q8.matmul(&lhs, m, &mut out, threads));
            let q4_time = best_time(|| q4.matmul(&lhs, m, &mut out, threads));
            let q5_time = best_time(|| q5.matmul(&lhs, m, &mut out, threads));
            let macs = (m * rows * cols) as f64;
            println!(
                "{name:<18} {m:>5} {:>10.3} {:>9.1} {:>10.3} {:>9.1} {:>10.3} {:>9.1}",
                q8_time * 1e3,
                macs / q8_time / 1e9,
                q4_time * 1e3,
                macs / q4_time / 1e9,
                q5_time * 1e3,
                macs / q5_time / 1e9
            );
        }
    }
    k_quants(threads, &mut next);
}

/// The Q4_K and Q6_K table, on random super-blocks.
fn k_quants(threads: usize, next: &mut impl FnMut() -> u64) {
    println!(
        "\n{:<18} {:>5} {:>10} {:>9} {:>10} {:>9}",
        "shape", "m", "Q4_K ms", "GMAC/s", "Q6_K ms", "GMAC/s"
    );
    for (name, rows, cols) in K_SHAPES {
        let supers = rows * cols / 256;
        let mut q4 = Vec::with_capacity(supers * 144);
        let mut q6 = Vec::with_capacity(supers * 210);
        let scale = half::f16::from_f32(0.001).to_le_bytes();
        for _ in 0..supers {
            q4.extend_from_slice(&scale);
            q4.extend_from_slice(&scale);
            q4.extend((0..140).map(|_| next() as u8));
            q6.extend((0..208).map(|_| next() as u8));
            q6.extend_from_slice(&scale);
        }
        let (Ok(q4), Ok(q6)) = (
            PackedQ4_K::pack(&q4, rows, cols),
            PackedQ6_K::pack(&q6, rows, cols),
        ) else {
            eprintln!("{name}: cannot pack");
            continue;
        };
        for m in [1, 256] {
            let lhs: Vec<f32> = (0..m * cols)
                .map(|_| (next() % 2000) as f32 / 1000.0 - 1.0)
                .collect();
            let mut out = vec![0f32; m * rows];
            let q4_time = best_time(|| q4.matmul(&lhs, m, &mut out, threads));
            let q6_time = best_time(|| q6.matmul(&lhs, m, &mut out, threads));
            let macs = (m * rows * cols) as f64;
            println!(
                "{name:<18} {m:>5} {:>10.3} {:>9.1} {:>10.3} {:>9.1}",
                q4_time * 1e3,
                macs / q4_time / 1e9,
                q6_time * 1e3,
                macs / q6_time / 1e9
            );
        }
    }
}

/// Seconds per call: the best of several windows, since on a shared machine the others only
/// add noise.
fn best_time(mut call: impl FnMut()) -> f64 {
    call();
    let mut best = f64::INFINITY;
    for _ in 0..6 {
        let (mut calls, start) = (0u32, Instant::now());
        while start.elapsed() < Duration::from_millis(150) {
            call();
            calls += 1;
        }
        best = best.min(start.elapsed().as_secs_f64() / f64::from(calls));
    }
    best
}

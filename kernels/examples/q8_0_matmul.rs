//! Prints the packed Q8_0 matmul's speed on the shapes of Qwen2.5-0.5B's layers, for one token
//! (decode) and for a prefill chunk of 256, so kernel changes can be compared in isolation:
//!   cargo run --release -p hearth-kernels --example q8_0_matmul [threads]
//! Threads default to the rayon pool's (`RAYON_NUM_THREADS`).

use std::time::{Duration, Instant};

use hearth_kernels::{Isa, PackedQ8_0};

/// (name, output rows, input columns): attention q/o, k/v, the MLP's gate/up and down.
const SHAPES: [(&str, usize, usize); 4] = [
    ("q/o 896x896", 896, 896),
    ("k/v 128x896", 128, 896),
    ("gate/up 4864x896", 4864, 896),
    ("down 896x4864", 896, 4864),
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
    println!("kernel {isa:?}, {threads} threads");
    println!(
        "{:<18} {:>5} {:>10} {:>9}",
        "shape", "m", "ms/call", "GMAC/s"
    );
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for (name, rows, cols) in SHAPES {
        let mut data = Vec::with_capacity(rows * cols / 32 * 34);
        for _ in 0..rows * cols / 32 {
            data.extend_from_slice(&half::f16::from_f32(0.01).to_le_bytes());
            data.extend((0..32).map(|_| next() as u8));
        }
        let Ok(packed) = PackedQ8_0::pack_for(isa, &data, rows, cols) else {
            eprintln!("{name}: cannot pack");
            continue;
        };
        for m in [1, 256] {
            let lhs: Vec<f32> = (0..m * cols)
                .map(|_| (next() % 2000) as f32 / 1000.0 - 1.0)
                .collect();
            let mut out = vec![0f32; m * rows];
            packed.matmul(&lhs, m, &mut out, threads);
            // The best of several windows: on a shared machine the others only add noise.
            let mut per_call = f64::INFINITY;
            for _ in 0..6 {
                let (mut calls, start) = (0u32, Instant::now());
                while start.elapsed() < Duration::from_millis(150) {
                    packed.matmul(&lhs, m, &mut out, threads);
                    calls += 1;
                }
                per_call = per_call.min(start.elapsed().as_secs_f64() / f64::from(calls));
            }
            let macs = (m * rows * cols) as f64;
            println!(
                "{name:<18} {m:>5} {:>10.3} {:>9.1}",
                per_call * 1e3,
                macs / per_call / 1e9
            );
        }
    }
}

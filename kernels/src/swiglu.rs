//! The MLP's gated activation, `silu(gate) · up`, in one pass over the stacked gate/up
//! projection's output, its rows split between threads (a decoded token's one row, in pieces).
//!
//! candle ran it as two ops on two strided views of that output: `silu` on a view that is not
//! one contiguous run takes candle's single-threaded path, then a product wrote a third tensor.
//! For a 1024-token prompt through Qwen2.5-0.5B that was 378 of about 2600 ms (2-core Zen 4 VM,
//! timed inside the forward pass), with the other core idle. Each value is computed as candle
//! computes it, `g / (1 + exp(−g)) · u` with the C library's `expf` (or `expf::exp4`, its bits
//! four at a time), so the results are the same bits: an approximate exponential moved greedy
//! agreement with llama.cpp (`docs/inference.md`).

use std::mem::MaybeUninit;

use rayon::prelude::*;

use crate::uninit::as_uninit;

/// Rows below this many values in all run on the calling thread, a row to a thread above it.
const PARALLEL_MIN_VALUES: usize = 16 * 1024;

/// A single row is split between threads when each gets at least this many values: handing
/// a piece to a spinning thread of the pool costs about as much as a few hundred `expf`s.
const SPLIT_MIN_VALUES: usize = 1024;

/// `out[r][i] = silu(gate_up[r][i]) · gate_up[r][width + i]` for every row `r`: each row of
/// `gate_up` holds `width` gate values, then `width` up values.
///
/// # Panics
/// If `width` is 0 or the lengths are not `rows · 2 · width` and `rows · width`.
pub fn silu_mul(gate_up: &[f32], width: usize, out: &mut [f32]) {
    silu_mul_uninit(gate_up, width, as_uninit(out));
}

/// [`silu_mul`] into memory that holds no values yet, all of which it writes: the engine's
/// output for a prompt chunk is 5 MB a layer (Qwen2.5-0.5B), which zeroing first would write
/// twice.
///
/// # Panics
/// As for [`silu_mul`].
pub fn silu_mul_uninit(gate_up: &[f32], width: usize, out: &mut [MaybeUninit<f32>]) {
    assert!(
        width > 0 && out.len().is_multiple_of(width) && gate_up.len() == 2 * out.len(),
        "gate/up is {} values and out {}, for rows of {width}",
        gate_up.len(),
        out.len()
    );
    let exp = Exponentials::here();
    let row = |(gate_up, out): (&[f32], &mut [MaybeUninit<f32>])| {
        let (gate, up) = gate_up.split_at(width);
        silu_mul_run(exp, gate, up, out);
    };
    let threads = rayon::current_num_threads();
    if out.len() == width && width >= threads * SPLIT_MIN_VALUES && threads > 1 {
        // A decoded token's one row: its `expf`s, about 15 µs for Qwen2.5-0.5B's 4864 on one
        // core of a 2-core Zen 4 VM, are split between the pool's threads instead.
        let (gate, up) = gate_up.split_at(width);
        let piece = width.div_ceil(threads);
        out.par_chunks_mut(piece)
            .zip(gate.par_chunks(piece).zip(up.par_chunks(piece)))
            .for_each(|(out, (gate, up))| silu_mul_run(exp, gate, up, out));
    } else if out.len() < PARALLEL_MIN_VALUES {
        gate_up
            .chunks_exact(2 * width)
            .zip(out.chunks_exact_mut(width))
            .for_each(row);
    } else {
        gate_up
            .par_chunks_exact(2 * width)
            .zip(out.par_chunks_exact_mut(width))
            .for_each(row);
    }
}

/// How the exponentials are taken: by the C library's `expf` one at a time, or four or sixteen
/// at a time to its bits where [`crate::expf::matches_libm`] found that possible. A prompt chunk's SiLU
/// took a tenth of the chunk's time on libm's calls (a 2048-token prompt through Qwen2.5-0.5B,
/// 2-core Intel Xeon VM, `perf`: 8% of the samples).
#[derive(Clone, Copy)]
enum Exponentials {
    Library,
    #[cfg(target_arch = "x86_64")]
    FourLanes,
    /// Sixteen at a time with AVX-512F, the same steps on each value (`expf::exp_lanes16`).
    /// A 2048-token prompt's SiLU went from 3.2% to 2.5% of its samples (Intel Xeon VM,
    /// `perf`): what is left is mostly the division and reading the gate/up rows from memory.
    #[cfg(target_arch = "x86_64")]
    SixteenLanes,
}

impl Exponentials {
    fn here() -> Self {
        #[cfg(target_arch = "x86_64")]
        if crate::expf::matches_libm() {
            return if is_x86_feature_detected!("avx512f") {
                Self::SixteenLanes
            } else {
                Self::FourLanes
            };
        }
        Self::Library
    }
}

/// `out[i] = silu(gate[i]) · up[i]` over one run of values.
fn silu_mul_run(exp: Exponentials, gate: &[f32], up: &[f32], out: &mut [MaybeUninit<f32>]) {
    let done = match exp {
        Exponentials::Library => 0,
        // SAFETY: `matches_libm` found AVX2 and FMA.
        #[cfg(target_arch = "x86_64")]
        Exponentials::FourLanes => unsafe { silu_mul_fours(gate, up, out) },
        // SAFETY: `matches_libm` found AVX2 and FMA, and `here` AVX-512F.
        #[cfg(target_arch = "x86_64")]
        Exponentials::SixteenLanes => unsafe {
            let done = silu_mul_sixteens(gate, up, out);
            done + silu_mul_fours(&gate[done..], &up[done..], &mut out[done..])
        },
    };
    for ((o, &g), &u) in out[done..].iter_mut().zip(&gate[done..]).zip(&up[done..]) {
        o.write(silu(g) * u);
    }
}

/// [`silu_mul_run`] four values at a time, as many fours as `out` holds; returns how many
/// values it wrote. Each step is candle's, `g / (1 + e) · u`, on the same bits of `e`.
///
/// # Safety
/// The CPU has AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn silu_mul_fours(gate: &[f32], up: &[f32], out: &mut [MaybeUninit<f32>]) -> usize {
    use std::arch::x86_64::*;

    use crate::expf::{exp_lanes, exp4, is_large};
    let fours = out.len().min(gate.len()).min(up.len()) / 4;
    let (sign, one) = (_mm_set1_ps(-0.0), _mm_set1_ps(1.0));
    for i in (0..fours * 4).step_by(4) {
        // SAFETY: values `i..i + 4` are inside all three runs (`fours` above).
        unsafe {
            let g = _mm_loadu_ps(gate.as_ptr().add(i));
            let minus_g = _mm_xor_ps(g, sign);
            let e = if is_large(minus_g) {
                let mut four = [0f32; 4];
                _mm_storeu_ps(four.as_mut_ptr(), minus_g);
                _mm_loadu_ps(exp4(four).as_ptr())
            } else {
                exp_lanes(minus_g)
            };
            let silu = _mm_div_ps(g, _mm_add_ps(one, e));
            let product = _mm_mul_ps(silu, _mm_loadu_ps(up.as_ptr().add(i)));
            _mm_storeu_ps(out.as_mut_ptr().add(i).cast(), product);
        }
    }
    fours * 4
}

/// [`silu_mul_fours`] sixteen values at a time, as many sixteens as `out` holds; returns how
/// many values it wrote.
///
/// # Safety
/// The CPU has AVX-512F, AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn silu_mul_sixteens(gate: &[f32], up: &[f32], out: &mut [MaybeUninit<f32>]) -> usize {
    use std::arch::x86_64::*;

    use crate::expf::{exp_lanes16, exp4, is_large16};
    let sixteens = out.len().min(gate.len()).min(up.len()) / 16;
    let (sign, one) = (_mm512_set1_epi32(i32::MIN), _mm512_set1_ps(1.0));
    for i in (0..sixteens * 16).step_by(16) {
        // SAFETY: values `i..i + 16` are inside all three runs (`sixteens` above).
        unsafe {
            let g = _mm512_loadu_ps(gate.as_ptr().add(i));
            let minus_g = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(g), sign));
            let e = if is_large16(minus_g) {
                let mut sixteen = [0f32; 16];
                _mm512_storeu_ps(sixteen.as_mut_ptr(), minus_g);
                for four in sixteen.chunks_exact_mut(4) {
                    let e = exp4([four[0], four[1], four[2], four[3]]);
                    four.copy_from_slice(&e);
                }
                _mm512_loadu_ps(sixteen.as_ptr())
            } else {
                exp_lanes16(minus_g)
            };
            let silu = _mm512_div_ps(g, _mm512_add_ps(one, e));
            let product = _mm512_mul_ps(silu, _mm512_loadu_ps(up.as_ptr().add(i)));
            _mm512_storeu_ps(out.as_mut_ptr().add(i).cast(), product);
        }
    }
    sixteens * 16
}

/// candle's SiLU for f32, operation for operation.
fn silu(g: f32) -> f32 {
    g / (1.0 + (-g).exp())
}

#[cfg(test)]
mod tests {
    use super::silu_mul;

    /// Each output is candle's `silu(g) · u` to the bit, on one row (the serial path, or split
    /// between threads) and on many (a row to a thread), large and tiny values and infinities
    /// included.
    #[test]
    fn each_value_is_silu_of_the_gate_times_the_up() {
        let specials = [0.0, -0.0, 1e-30, -88.0, 88.0, 100.0, -100.0, f32::INFINITY];
        let cases = [
            (1, 7, 1),
            (1, 4864, 1),
            (1, 4864, 3),
            (1, 3001, 2),
            (9, 4864, 2),
        ];
        for (rows, width, threads) in cases {
            let gate_up: Vec<f32> = (0..rows * 2 * width)
                .map(|i| match specials.get(i % 97) {
                    Some(&special) => special,
                    None => ((i * 7919) % 2001) as f32 / 100.0 - 10.0,
                })
                .collect();
            let mut out = vec![f32::NAN; rows * width];
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| silu_mul(&gate_up, width, &mut out));
            for r in 0..rows {
                for i in 0..width {
                    let g = gate_up[r * 2 * width + i];
                    let u = gate_up[r * 2 * width + width + i];
                    let want = g / (1.0 + (-g).exp()) * u;
                    let got = out[r * width + i];
                    assert!(
                        got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                        "{threads} threads, row {r}, value {i}: silu({g}) · {u} = {want}, got {got}"
                    );
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "for rows of 4")]
    fn mismatched_lengths_are_refused() {
        silu_mul(&[0.0; 8], 4, &mut [0.0; 3]);
    }
}

//! The Q5_1 kernel on AVX2, and on AVX-VNNI: Q5_0's sums of `(q − 16) · a` (see
//! `q5_0::avx2`), then `(m + 16 · d) · a_scale · Σa` added back (see the module above).

use super::{TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx2_frame::avx2_and_vnni_groups;
#[cfg(target_arch = "x86_64")]
use crate::avx2_frame::{add_scaled, sixteen_pair_sums, store_rows, widen_halves};
#[cfg(target_arch = "x86_64")]
use crate::byte_products::ByteProducts;
#[cfg(target_arch = "x86_64")]
use crate::five_bit_layout::top_pairs_sums;
use crate::prefetch::{WeightRequests, prefetch_part_twice};

/// Activation rows per micro-kernel call, as for Q5_0: eight ran gate/up at 108–109 GMAC/s
/// against 88–90 for four, down at 105–106 against 80–85 (Zen 2, m = 256, in turn).
const MR: usize = 8;

const _: () = assert!(TILE_ROWS == 16);

// AVX-VNNI four rows a call, as for Q4_0.
avx2_and_vnni_groups!(Tile, 1, avx-vnni rows 4);

/// Rows `first..first + R`, their byte products summed as `P` sums them.
///
/// # Safety
/// As for [`group`], for those rows; runs inlined into an entry point with AVX2, FMA, F16C
/// and what `P` needs.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn rows_with<const R: usize, P: ByteProducts>(
    tiles: &[Tile],
    acts: &QuantizedRows,
    out: *mut f32,
    stride: usize,
    first: usize,
) {
    use std::arch::x86_64::*;
    let blocks = acts.blocks;
    let (words, scales, offsets, pair_sums) = acts.rows(first..first + R);
    // SAFETY: the entry point has the features; a tile's `qs` and `qh` are 32-byte aligned
    // (at offsets 0 and 256 of the aligned tile); rows `first..first + R` are the caller's.
    unsafe {
        let mut acc = [[_mm256_setzero_ps(); 2]; R];
        let requests = WeightRequests::here();
        for (block, tile) in tiles.iter().enumerate() {
            let mut sums = [[_mm256_setzero_si256(); 2]; R];
            let each_word = |q| prefetch_part_twice::<R, 4, _>(requests, tile, q);
            let acts = (words, blocks, block);
            top_pairs_sums::<R, P>((&tile.qs, &tile.qh), acts, each_word, &mut sums);
            let (weight_scales, mins) = (widen_halves(&tile.scales), widen_halves(&tile.mins));
            // What each unit of `a_scale · Σa` adds: `m`, and the `16 · d` that the sums of
            // `q − 16` left out.
            let sixteen = _mm256_set1_ps(16.0);
            let mins = [
                _mm256_fmadd_ps(weight_scales[0], sixteen, mins[0]),
                _mm256_fmadd_ps(weight_scales[1], sixteen, mins[1]),
            ];
            for (r, acc) in acc.iter_mut().enumerate() {
                let at = r * blocks + block;
                let offset = sixteen_pair_sums(&pair_sums[at]);
                let dots = [
                    P::widen_less(sums[r][0], offset),
                    P::widen_less(sums[r][1], offset),
                ];
                add_scaled(acc, dots, weight_scales, scales[at]);
                // `offsets` holds −128 · Σa.
                let a_sum = _mm256_set1_ps((-(offsets[at] / 128)) as f32 * scales[at]);
                for h in 0..2 {
                    acc[h] = _mm256_fmadd_ps(mins[h], a_sum, acc[h]);
                }
            }
        }
        store_rows(&acc, out, first, stride)
    }
}

//! The Q5_K kernel on AVX2, and on AVX-VNNI: Q4_K's (see `q4_k::avx2`) on 5-bit values unpacked as Q5_0's
//! are (see `five_bit_layout`), summing `(q − 16) · a` in i16 (see the module above for why
//! that is exact).

use super::{SUBS, TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx2_frame::avx2_and_vnni_groups;
#[cfg(target_arch = "x86_64")]
use crate::avx2_frame::{add_scaled, sixteen_pair_sums, store_rows, widen_bytes8x2, widen_halves};
#[cfg(target_arch = "x86_64")]
use crate::byte_products::ByteProducts;
#[cfg(target_arch = "x86_64")]
use crate::five_bit_layout::top_pairs_sums;
use crate::prefetch::{WeightRequests, prefetch_part_twice};

/// Activation rows per micro-kernel call, as for Q5_0: eight ran the 0.5B's down at 107
/// GMAC/s against 86–89 for three, 1536-wide gate/up at 101 against 91–94 (Zen 2, m = 256,
/// in turn).
const MR: usize = 8;

const _: () = assert!(TILE_ROWS == 16);

// AVX-VNNI four rows a call, word by word (`ByteProducts::UNPACK_FIRST`), as for Q4_K.
avx2_and_vnni_groups!(Tile, SUBS, avx-vnni rows 4);

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
    // SAFETY: the entry point has the features; `qs[j]` and `qh[j]` are 32-byte aligned
    // offsets of the tile; rows `first..first + R` are the caller's.
    unsafe {
        let mut acc = [[_mm256_setzero_ps(); 2]; R];
        let requests = WeightRequests::here();
        for (s, tile) in tiles.iter().enumerate() {
            // Per row and half: Σ_j sc_j · ((q − 16) · a)_j in i32, exact (see `q4_k::avx2`).
            let mut dots = [[_mm256_setzero_si256(); 2]; R];
            let (d, dmin) = (widen_halves(&tile.d), widen_halves(&tile.dmin));
            for j in 0..SUBS {
                prefetch_part_twice::<R, SUBS, _>(requests, tile, j);
                let block = s * SUBS + j;
                let mut sums = [[_mm256_setzero_si256(); 2]; R];
                let acts = (words, blocks, block);
                top_pairs_sums::<R, P>((&tile.qs[j], &tile.qh[j]), acts, |_| {}, &mut sums);
                let (sc, mins) = (
                    widen_bytes8x2(&tile.scales[j]),
                    widen_bytes8x2(&tile.mins[j]),
                );
                // What comes off per unit of `a_scale · Σa`: `dmin · m`, less the `16 · d · sc`
                // that the sums of `q − 16` left out.
                let sixteen = _mm256_set1_ps(16.0);
                let mins = [
                    _mm256_sub_ps(
                        _mm256_mul_ps(dmin[0], _mm256_cvtepi32_ps(mins[0])),
                        _mm256_mul_ps(_mm256_mul_ps(d[0], sixteen), _mm256_cvtepi32_ps(sc[0])),
                    ),
                    _mm256_sub_ps(
                        _mm256_mul_ps(dmin[1], _mm256_cvtepi32_ps(mins[1])),
                        _mm256_mul_ps(_mm256_mul_ps(d[1], sixteen), _mm256_cvtepi32_ps(sc[1])),
                    ),
                ];
                let sc = [P::sub_block_scales(sc[0]), P::sub_block_scales(sc[1])];
                for (r, (acc, dots)) in acc.iter_mut().zip(dots.iter_mut()).enumerate() {
                    let at = r * blocks + block;
                    // `offsets` holds −128 · Σa.
                    let a_sum = _mm256_set1_ps((-(offsets[at] / 128)) as f32 * scales[at]);
                    let offset = sixteen_pair_sums(&pair_sums[at]);
                    for h in 0..2 {
                        let sum = P::less(sums[r][h], offset);
                        dots[h] = P::add_times_scales(dots[h], sum, sc[h]);
                        acc[h] = _mm256_fnmadd_ps(mins[h], a_sum, acc[h]);
                    }
                }
            }
            for (r, (acc, dots)) in acc.iter_mut().zip(dots).enumerate() {
                add_scaled(acc, dots, d, scales[r * blocks + s * SUBS]);
            }
        }
        store_rows(&acc, out, first, stride)
    }
}

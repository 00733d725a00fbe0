//! The Q4_1 kernel on AVX2 with F16C (see the module above for the arithmetic).

use super::{TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx2_frame::avx2_group;
#[cfg(target_arch = "x86_64")]
use crate::avx2_frame::{nibble_sums, store_rows, widen_halves};
use crate::prefetch::{WeightRequests, prefetch_part_twice};

/// Activation rows per micro-kernel call, as for Q4_0.
const MR: usize = 8;

const _: () = assert!(TILE_ROWS == 16);

avx2_group!(Tile, 1);

/// # Safety
/// As for [`group`], for rows `first..first + R`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn rows<const R: usize>(
    tiles: &[Tile],
    acts: &QuantizedRows,
    first: usize,
    out: *mut f32,
    stride: usize,
) {
    use std::arch::x86_64::*;
    let blocks = acts.blocks;
    let (words, scales, offsets, _) = acts.rows(first..first + R);
    let ones = _mm256_set1_epi16(1);
    let mut acc = [[_mm256_setzero_ps(); 2]; R];
    let requests = WeightRequests::here();
    for (block, tile) in tiles.iter().enumerate() {
        // SAFETY: the tile's first 256 bytes, 64-byte aligned, are its nibbles.
        let sums = unsafe {
            nibble_sums::<R>(tile.qs.as_ptr(), words, blocks, block, |q| {
                prefetch_part_twice::<R, 4, _>(requests, tile, q)
            })
        };
        let (d, m) = (widen_halves(&tile.d), widen_halves(&tile.m));
        for (r, acc) in acc.iter_mut().enumerate() {
            let at = r * blocks + block;
            let scale = _mm256_set1_ps(scales[at]);
            // `offsets` holds −128 · Σa.
            let a_sum = _mm256_set1_ps((-(offsets[at] / 128)) as f32 * scales[at]);
            for h in 0..2 {
                let dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(sums[r][h], ones));
                acc[h] = _mm256_fmadd_ps(dot, _mm256_mul_ps(d[h], scale), acc[h]);
                acc[h] = _mm256_fmadd_ps(m[h], a_sum, acc[h]);
            }
        }
    }
    // SAFETY: rows `first..first + R` are the caller's.
    unsafe { store_rows(&acc, out, first, stride) }
}

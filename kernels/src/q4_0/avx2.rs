//! The Q4_0 kernel on AVX2 (see the module above for the arithmetic).

use super::{TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx2_frame::avx2_group;
#[cfg(target_arch = "x86_64")]
use crate::avx2_frame::{nibble_sums, store_rows, widen_halves};
use crate::prefetch::{WeightRequests, prefetch_part_twice};

/// Activation rows per micro-kernel call. `nibble_sums` unpacks a tile's words once for four
/// rows or more and each row then keeps only its two sums in registers, so eight rows share
/// each unpacking (three had been the most that fit with every row's sums live): on a 2-core
/// Zen 2 VM (2 threads, m = 256, in turn) Q4_0 gate/up 95–110 → 129–132 GMAC/s, down 88–107
/// → 124; Q4_1 gate/up 92–103 → 112–115.
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
        // SAFETY: the tile's first 256 bytes, 32-byte aligned, are its nibbles.
        let sums = unsafe {
            nibble_sums::<R>(tile.qs.as_ptr(), words, blocks, block, |q| {
                prefetch_part_twice::<R, 4, _>(requests, tile, q)
            })
        };
        let weight_scales = widen_halves(&tile.scales);
        for (r, acc) in acc.iter_mut().enumerate() {
            let at = r * blocks + block;
            // `offsets` holds −128 · Σa; the nibbles' −8 needs −8 · Σa, exactly a sixteenth.
            let correction = _mm256_set1_epi32(offsets[at] / 16);
            let scale = _mm256_set1_ps(scales[at]);
            for h in 0..2 {
                let sum = _mm256_add_epi32(_mm256_madd_epi16(sums[r][h], ones), correction);
                let scale = _mm256_mul_ps(weight_scales[h], scale);
                acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), scale, acc[h]);
            }
        }
    }
    // SAFETY: rows `first..first + R` are the caller's.
    unsafe { store_rows(&acc, out, first, stride) }
}

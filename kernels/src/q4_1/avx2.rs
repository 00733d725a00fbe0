//! The Q4_1 kernel on AVX2 with F16C, and on AVX-VNNI (see the module above for the
//! arithmetic).

use super::{TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx2_frame::avx2_and_vnni_groups;
#[cfg(target_arch = "x86_64")]
use crate::avx2_frame::{add_scaled, nibble_sums, store_rows, widen_halves};
#[cfg(target_arch = "x86_64")]
use crate::byte_products::ByteProducts;
use crate::prefetch::{WeightRequests, prefetch_part_twice};

/// Activation rows per micro-kernel call, as for Q4_0.
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
    let (words, scales, offsets, _) = acts.rows(first..first + R);
    // SAFETY: the entry point has the features; a tile's first 256 bytes, 32-byte aligned,
    // are its nibbles; rows `first..first + R` are the caller's.
    unsafe {
        let mut acc = [[_mm256_setzero_ps(); 2]; R];
        let requests = WeightRequests::here();
        for (block, tile) in tiles.iter().enumerate() {
            let sums = nibble_sums::<R, P>(&tile.qs, (words, blocks, block), |q| {
                prefetch_part_twice::<R, 4, _>(requests, tile, q)
            });
            let (d, m) = (widen_halves(&tile.d), widen_halves(&tile.m));
            for (r, acc) in acc.iter_mut().enumerate() {
                let at = r * blocks + block;
                add_scaled(
                    acc,
                    [P::widen(sums[r][0]), P::widen(sums[r][1])],
                    d,
                    scales[at],
                );
                // `offsets` holds −128 · Σa.
                let a_sum = _mm256_set1_ps((-(offsets[at] / 128)) as f32 * scales[at]);
                for h in 0..2 {
                    acc[h] = _mm256_fmadd_ps(m[h], a_sum, acc[h]);
                }
            }
        }
        store_rows(&acc, out, first, stride)
    }
}

//! The Q4_0 kernel on AVX2, and on AVX-VNNI (see the module above for the arithmetic).

use super::{TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx2_frame::avx2_and_vnni_groups;
#[cfg(target_arch = "x86_64")]
use crate::avx2_frame::{add_scaled, nibble_sums, store_rows, unpack_nibbles, widen_halves};
#[cfg(target_arch = "x86_64")]
use crate::byte_products::ByteProducts;
use crate::prefetch::{WeightRequests, prefetch_part_twice};
#[cfg(target_arch = "x86_64")]
use crate::widened::{ByteTile, store_word256};
#[cfg(target_arch = "x86_64")]
use std::mem::MaybeUninit;

/// Activation rows per micro-kernel call. `nibble_sums` unpacks a tile's words once for four
/// rows or more and each row then keeps only its two sums in registers, so eight rows share
/// each unpacking (three had been the most that fit with every row's sums live): on a 2-core
/// Zen 2 VM (2 threads, m = 256, in turn) Q4_0 gate/up 95–110 → 129–132 GMAC/s, down 88–107
/// → 124; Q4_1 gate/up 92–103 → 112–115.
const MR: usize = 8;

const _: () = assert!(TILE_ROWS == 16);

// AVX-VNNI goes word by word (`ByteProducts::UNPACK_FIRST`), four rows a call: their sums,
// a word's four value registers and two broadcasts take fourteen of the sixteen registers.
avx2_and_vnni_groups!(Tile, 1, avx-vnni rows 4, prompts widened by widen);

/// `tile` as a Q8_0 tile of the AVX-VNNI kernel, for prompt rows (`widened`): each nibble `q`
/// (meaning `q − 8`) becomes `q − 8 + 128`, in Q8_0's column order, and the scales are the
/// same.
///
/// # Safety
/// The CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn widen(tile: &Tile, into: &mut MaybeUninit<ByteTile>) {
    use std::arch::x86_64::*;
    let offset = _mm256_set1_epi8((128 - 8) as i8);
    for q in 0..4 {
        // SAFETY: the tile's first 256 bytes, 32-byte aligned, are its nibbles; `q < 4`; this
        // function has AVX2.
        unsafe {
            let values = unpack_nibbles(&tile.qs, q, &|_| {});
            store_word256(into, q, &values, offset);
        }
    }
    // SAFETY: `scales` is a field of the tile being written.
    unsafe { (&raw mut (*into.as_mut_ptr()).0.scales).write(tile.scales) };
}

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
            let weight_scales = widen_halves(&tile.scales);
            for (r, acc) in acc.iter_mut().enumerate() {
                let at = r * blocks + block;
                // `offsets` holds −128 · Σa; the nibbles' −8 needs −8 · Σa, exactly a
                // sixteenth.
                let correction = _mm256_set1_epi32(offsets[at] / 16);
                let dots = [
                    _mm256_add_epi32(P::widen(sums[r][0]), correction),
                    _mm256_add_epi32(P::widen(sums[r][1]), correction),
                ];
                add_scaled(acc, dots, weight_scales, scales[at]);
            }
        }
        store_rows(&acc, out, first, stride)
    }
}

//! The Q5_0 kernel on AVX2, and on AVX-VNNI (see the module above for the arithmetic).

use super::{TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx2_frame::avx2_and_vnni_groups;
#[cfg(target_arch = "x86_64")]
use crate::avx2_frame::{add_scaled, sixteen_pair_sums, store_rows, widen_halves};
#[cfg(target_arch = "x86_64")]
use crate::byte_products::ByteProducts;
#[cfg(target_arch = "x86_64")]
use crate::five_bit_layout::{top_pairs_sums, top_pairs_words};
use crate::prefetch::{WeightRequests, prefetch_part_twice};
#[cfg(target_arch = "x86_64")]
use crate::widened::{ByteTile, store_word256};
#[cfg(target_arch = "x86_64")]
use std::mem::MaybeUninit;

/// Activation rows per micro-kernel call. A tile is unpacked once per call and each row then
/// keeps only its two sums in registers, so more rows share the unpacking: on a 2-core Zen 2
/// VM (2 threads, m = 256, `packed_matmul`, runs in turn) eight rows ran gate/up at 119–122
/// GMAC/s against 99–104 for four, down at 113–119 against 93–97; twelve and sixteen were no
/// better. (With the values unpacked word by word and every row's sums live, four had been
/// the most that fit the registers.)
const MR: usize = 8;

const _: () = assert!(TILE_ROWS == 16);

// AVX-VNNI goes word by word (`ByteProducts::UNPACK_FIRST`), four rows a call: their sums,
// a word's four value registers and two broadcasts take fourteen of the sixteen registers.
avx2_and_vnni_groups!(Tile, 1, avx-vnni rows 4, prompts widened by widen);

/// `tile` as a Q8_0 tile of the AVX-VNNI kernel, for prompt rows (`widened`): each value `q`
/// (0..=31, meaning `q − 16`) becomes `q − 16 + 128`, in Q8_0's column order, and the scales
/// are the same. (AVX2's prompts stay on this kernel: its Q8_0 kernel is no faster.)
///
/// # Safety
/// The CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn widen(tile: &Tile, into: &mut MaybeUninit<ByteTile>) {
    use std::arch::x86_64::*;
    // SAFETY: `qh` is 64 bytes at offset 256 of the 32-byte aligned tile: rows 0–7, then
    // rows 8–15.
    let tops = unsafe {
        let qh = tile.qh.as_ptr().cast::<__m256i>();
        [_mm256_load_si256(qh), _mm256_load_si256(qh.add(1))]
    };
    let offset = _mm256_set1_epi8((128 - 16) as i8);
    for (q, values) in top_pairs_words(&tile.qs, tops, |_| {}).iter().enumerate() {
        // SAFETY: `q < 4`; this function has AVX2.
        unsafe { store_word256(into, q, values, offset) };
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
    let (words, scales, _, pair_sums) = acts.rows(first..first + R);
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
            let weight_scales = widen_halves(&tile.scales);
            for (r, acc) in acc.iter_mut().enumerate() {
                let at = r * blocks + block;
                let offset = sixteen_pair_sums(&pair_sums[at]);
                let dots = [
                    P::widen_less(sums[r][0], offset),
                    P::widen_less(sums[r][1], offset),
                ];
                add_scaled(acc, dots, weight_scales, scales[at]);
            }
        }
        store_rows(&acc, out, first, stride)
    }
}

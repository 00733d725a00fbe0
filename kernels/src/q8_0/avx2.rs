//! The AVX2 kernel, for CPUs without AVX-512 VNNI (Zen 2 and 3, most Intel desktop parts).
//!
//! AVX2 has no 4-way byte dot product, only `vpmaddubsw` (unsigned × signed bytes, adjacent
//! pairs summed to i16) and `vpmaddwd` (i16 pairs summed to i32). The weights are packed signed
//! (no offset; [`super::weight_bias`]) and multiplied the way ggml does it: `|w|` as the
//! unsigned operand and the activation with `w`'s sign as the signed one. Both factors are then
//! at most 128 and 127 in magnitude, so a pair sum stays below `i16::MAX`.
//!
//! A tile's 16 rows are two 8-lane halves. The weight registers of one 4-column word, and
//! their magnitudes, are computed once per `MR` activation rows (ggml takes `|w|` again for
//! every row).

use super::{TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx2_frame::avx2_group;
#[cfg(target_arch = "x86_64")]
use crate::avx2_frame::{add_scaled, store_rows, widen_halves};
use crate::prefetch::{WeightRequests, prefetch_part_twice};

/// Activation rows per micro-kernel call. Four rows' i32 sums for both halves plus the
/// weights and their magnitudes fill the sixteen registers; the f32 accumulators, touched
/// once per block, live in L1. Measured on Zen (2 threads, m = 256): 1.2–1.5× the throughput
/// of two rows.
const MR: usize = 4;

const _: () = assert!(TILE_ROWS == 16);

avx2_group!(Tile, 1);

/// # Safety
/// As for [`group`], for rows `first..first + R`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn rows<const R: usize>(
    tiles: &[Tile],
    acts: &QuantizedRows,
    out: *mut f32,
    stride: usize,
    first: usize,
) {
    use std::arch::x86_64::*;
    let blocks = acts.blocks;
    let (words, scales, _, _) = acts.rows(first..first + R);
    let ones = _mm256_set1_epi16(1);
    let mut acc = [[_mm256_setzero_ps(); 2]; R];
    let requests = WeightRequests::here();
    for (block, tile) in tiles.iter().enumerate() {
        let qs = tile.qs.as_ptr().cast::<__m256i>();
        let mut sums = [[_mm256_setzero_si256(); 2]; R];
        #[expect(
            clippy::needless_range_loop,
            reason = "`q` picks the same word from the tile and from every row's block"
        )]
        for q in 0..8 {
            prefetch_part_twice::<R, 8, _>(requests, tile, q);
            // SAFETY: `qs` is 512 bytes at the 32-byte aligned start of the tile; word `q` is
            // its 64 bytes from `q * 64`, rows 0–7 then rows 8–15.
            let w = unsafe {
                [
                    _mm256_load_si256(qs.add(2 * q)),
                    _mm256_load_si256(qs.add(2 * q + 1)),
                ]
            };
            let magnitude = [_mm256_abs_epi8(w[0]), _mm256_abs_epi8(w[1])];
            for (r, sums) in sums.iter_mut().enumerate() {
                let a = _mm256_set1_epi32(words[r * blocks + block][q]);
                for h in 0..2 {
                    let pairs = _mm256_maddubs_epi16(magnitude[h], _mm256_sign_epi8(a, w[h]));
                    sums[h] = _mm256_add_epi32(sums[h], _mm256_madd_epi16(pairs, ones));
                }
            }
        }
        let weight_scales = widen_halves(&tile.scales);
        for (r, acc) in acc.iter_mut().enumerate() {
            add_scaled(acc, sums[r], weight_scales, scales[r * blocks + block]);
        }
    }
    // SAFETY: rows `first..first + R` are the caller's.
    unsafe { store_rows(&acc, out, first, stride) }
}

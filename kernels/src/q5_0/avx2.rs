//! The Q5_0 kernel on AVX2 (see the module above for the arithmetic).

use super::{TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx2_frame::avx2_group;
#[cfg(target_arch = "x86_64")]
use crate::avx2_frame::{add_word, store_rows, widen_halves};
#[cfg(target_arch = "x86_64")]
use crate::five_bit_layout::top_pairs_words;
use crate::prefetch::{WeightRequests, prefetch_part_twice};

/// Activation rows per micro-kernel call. A tile is unpacked once per call and each row then
/// keeps only its two sums in registers, so more rows share the unpacking: on a 2-core Zen 2
/// VM (2 threads, m = 256, `packed_matmul`, runs in turn) eight rows ran gate/up at 119–122
/// GMAC/s against 99–104 for four, down at 113–119 against 93–97; twelve and sixteen were no
/// better. (With the values unpacked word by word and every row's sums live, four had been
/// the most that fit the registers.)
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
    let (words, scales, _, pair_sums) = acts.rows(first..first + R);
    let ones = _mm256_set1_epi16(1);
    let mut acc = [[_mm256_setzero_ps(); 2]; R];
    let requests = WeightRequests::here();
    for (block, tile) in tiles.iter().enumerate() {
        // SAFETY: `qh` is 64 bytes at offset 256 of the 32-byte aligned tile: rows 0–7, then
        // rows 8–15: the high values' top two bits (see `five_bit_layout`).
        let tops = unsafe {
            let qh = tile.qh.as_ptr().cast::<__m256i>();
            [_mm256_load_si256(qh), _mm256_load_si256(qh.add(1))]
        };
        // The tile's four words unpacked first, then each row over them: a prompt's rows read
        // the values from L1 and keep their sums in registers. Word by word, with every row's
        // sums live, a prompt ran 16% slower (Zen 2): the compiler spilled the values instead.
        let values = top_pairs_words(&tile.qs, tops, |q| {
            prefetch_part_twice::<R, 4, _>(requests, tile, q)
        });
        let mut sums = [[_mm256_setzero_si256(); 2]; R];
        for (r, sums) in sums.iter_mut().enumerate() {
            let row = &words[r * blocks + block];
            for (q, values) in values.iter().enumerate() {
                add_word(sums, row, q, values);
            }
        }
        let weight_scales = widen_halves(&tile.scales);
        for (r, acc) in acc.iter_mut().enumerate() {
            let at = r * blocks + block;
            // 16 · the pair sums of both halves (a lane holds products from either).
            let offset = _mm256_slli_epi16(
                _mm256_add_epi16(
                    _mm256_set1_epi32(pair_sums[at][0]),
                    _mm256_set1_epi32(pair_sums[at][1]),
                ),
                4,
            );
            let scale = _mm256_set1_ps(scales[at]);
            for h in 0..2 {
                let dot = _mm256_madd_epi16(_mm256_sub_epi16(sums[r][h], offset), ones);
                let scale = _mm256_mul_ps(weight_scales[h], scale);
                acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), scale, acc[h]);
            }
        }
    }
    // SAFETY: rows `first..first + R` are the caller's.
    unsafe { store_rows(&acc, out, first, stride) }
}

//! The Q5_1 kernel on AVX2: Q5_0's sums of `(q − 16) · a` (see `q5_0::avx2`), then
//! `(m + 16 · d) · a_scale · Σa` added back (see the module above).

use super::{TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx2_frame::avx2_group;
#[cfg(target_arch = "x86_64")]
use crate::avx2_frame::{add_word, store_rows, widen_halves};
#[cfg(target_arch = "x86_64")]
use crate::five_bit_layout::top_pairs_words;
use crate::prefetch::{WeightRequests, prefetch_part_twice};

/// Activation rows per micro-kernel call, as for Q5_0: eight ran gate/up at 108–109 GMAC/s
/// against 88–90 for four, down at 105–106 against 80–85 (Zen 2, m = 256, in turn).
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
    let (words, scales, offsets, pair_sums) = acts.rows(first..first + R);
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
            // 16 · the pair sums of both halves (a lane holds products from either).
            let offset = _mm256_slli_epi16(
                _mm256_add_epi16(
                    _mm256_set1_epi32(pair_sums[at][0]),
                    _mm256_set1_epi32(pair_sums[at][1]),
                ),
                4,
            );
            let scale = _mm256_set1_ps(scales[at]);
            // `offsets` holds −128 · Σa.
            let a_sum = _mm256_set1_ps((-(offsets[at] / 128)) as f32 * scales[at]);
            for h in 0..2 {
                let dot = _mm256_madd_epi16(_mm256_sub_epi16(sums[r][h], offset), ones);
                let scale = _mm256_mul_ps(weight_scales[h], scale);
                acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), scale, acc[h]);
                acc[h] = _mm256_fmadd_ps(mins[h], a_sum, acc[h]);
            }
        }
    }
    // SAFETY: rows `first..first + R` are the caller's.
    unsafe { store_rows(&acc, out, first, stride) }
}

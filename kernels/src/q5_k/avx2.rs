//! The Q5_K kernel on AVX2: Q4_K's (see `q4_k::avx2`) on 5-bit values unpacked as Q5_0's
//! are (see `five_bit_layout`), summing `(q − 16) · a` in i16 (see the module above for why
//! that is exact).

use super::{SUBS, TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx2_frame::avx2_group;
#[cfg(target_arch = "x86_64")]
use crate::avx2_frame::{add_scaled, add_word, store_rows, widen_bytes8x2, widen_halves};
#[cfg(target_arch = "x86_64")]
use crate::byte_products::Maddubs;
#[cfg(target_arch = "x86_64")]
use crate::five_bit_layout::top_pairs_words;
use crate::prefetch::{WeightRequests, prefetch_part_twice};

/// Activation rows per micro-kernel call, as for Q5_0: eight ran the 0.5B's down at 107
/// GMAC/s against 86–89 for three, 1536-wide gate/up at 101 against 91–94 (Zen 2, m = 256,
/// in turn).
const MR: usize = 8;

const _: () = assert!(TILE_ROWS == 16);

avx2_group!(Tile, SUBS);

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
    let (words, scales, offsets, pair_sums) = acts.rows(first..first + R);
    let mut acc = [[_mm256_setzero_ps(); 2]; R];
    let requests = WeightRequests::here();
    for (s, tile) in tiles.iter().enumerate() {
        // Per row and half: Σ_j sc_j · ((q − 16) · a)_j in i32, exact (see `q4_k::avx2`).
        let mut dots = [[_mm256_setzero_si256(); 2]; R];
        let (d, dmin) = (widen_halves(&tile.d), widen_halves(&tile.dmin));
        for j in 0..SUBS {
            prefetch_part_twice::<R, SUBS, _>(requests, tile, j);
            let block = s * SUBS + j;
            // SAFETY: `qh[j]` is 64 bytes at a 64-byte aligned offset of the tile: rows 0–7,
            // then rows 8–15: the high values' top two bits (see `five_bit_layout`).
            let tops = unsafe {
                let qh = tile.qh[j].as_ptr().cast::<__m256i>();
                [_mm256_load_si256(qh), _mm256_load_si256(qh.add(1))]
            };
            // The sub-block's words unpacked first, then each row over them, as in `q5_0::avx2`.
            let values = top_pairs_words(&tile.qs[j], tops, |_| {});
            let mut sums = [[_mm256_setzero_si256(); 2]; R];
            for (r, sums) in sums.iter_mut().enumerate() {
                let row = &words[r * blocks + block];
                for (q, values) in values.iter().enumerate() {
                    // SAFETY: this kernel has AVX2.
                    unsafe { add_word::<Maddubs>(sums, row, q, values) };
                }
            }
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
            // The scale in both i16 halves of its row's lane, for `vpmaddwd`.
            let sc = sc.map(|sc| _mm256_or_si256(sc, _mm256_slli_epi32(sc, 16)));
            for (r, (acc, dots)) in acc.iter_mut().zip(dots.iter_mut()).enumerate() {
                let at = r * blocks + block;
                // `offsets` holds −128 · Σa.
                let a_sum = _mm256_set1_ps((-(offsets[at] / 128)) as f32 * scales[at]);
                // 16 · the pair sums of both halves (a lane holds products from either).
                let offset = _mm256_slli_epi16(
                    _mm256_add_epi16(
                        _mm256_set1_epi32(pair_sums[at][0]),
                        _mm256_set1_epi32(pair_sums[at][1]),
                    ),
                    4,
                );
                for h in 0..2 {
                    let sum = _mm256_sub_epi16(sums[r][h], offset);
                    dots[h] = _mm256_add_epi32(dots[h], _mm256_madd_epi16(sum, sc[h]));
                    acc[h] = _mm256_fnmadd_ps(mins[h], a_sum, acc[h]);
                }
            }
        }
        for (r, (acc, dots)) in acc.iter_mut().zip(dots).enumerate() {
            add_scaled(acc, dots, d, scales[r * blocks + s * SUBS]);
        }
    }
    // SAFETY: rows `first..first + R` are the caller's.
    unsafe { store_rows(&acc, out, first, stride) }
}

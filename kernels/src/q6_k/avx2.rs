//! The Q6_K kernel on AVX2 (see the module above for the arithmetic).

use super::{SUBS, TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx2_frame::avx2_group;
#[cfg(target_arch = "x86_64")]
use crate::avx2_frame::store_rows;
use crate::tiled::prefetch_ahead;

/// Activation rows per micro-kernel call. The kernel takes the tile's two halves of 8 rows one
/// after the other, so each row keeps two i16 sums (one per scale) next to two unpacked weight
/// registers.
const MR: usize = 4;

const _: () = assert!(TILE_ROWS == 16);

avx2_group!(Tile, SUBS);

/// # Safety
/// As for [`group`], for rows `first..first + R`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn rows<const R: usize>(
    tiles: &[Tile],
    acts: &QuantizedRows,
    first: usize,
    out: *mut f32,
    stride: usize,
) {
    use std::arch::x86_64::*;
    let blocks = acts.blocks;
    let at = first * blocks..(first + R) * blocks;
    let (words, scales, pair_sums) = (
        &acts.words[at.clone()],
        &acts.scales[at.clone()],
        &acts.pair_sums[at],
    );
    let (nibble, high_bits) = (_mm256_set1_epi8(0x0f), _mm256_set1_epi8(0x30));
    let mut acc = [[_mm256_setzero_ps(); 2]; R];
    for (s, tile) in tiles.iter().enumerate() {
        prefetch_ahead::<R, _>(tile);
        for j in 0..SUBS {
            let block = s * SUBS + j;
            let (ql, qh) = (
                tile.ql[j].as_ptr().cast::<__m256i>(),
                tile.qh[j].as_ptr().cast::<__m256i>(),
            );
            // The tile's rows 0–7, then 8–15: each half of a 64-byte `ql` word is one of them.
            for h in 0..2 {
                // `[row][values 0..16 or 16..32]`, wrapping i16 sums.
                let mut sums = [[_mm256_setzero_si256(); 2]; R];
                for q in 0..4 {
                    // SAFETY: `ql[j]` is 256 bytes and `qh[j]` 128 at 64-byte aligned offsets
                    // of the tile; word `q` is 64 bytes of `ql` from `q * 64` (rows 0–7, then
                    // 8–15) and 32 of `qh` from `q * 32`.
                    let (raw, high) = unsafe {
                        (
                            _mm256_load_si256(ql.add(2 * q + h)),
                            _mm256_load_si256(qh.add(q)),
                        )
                    };
                    // Each nibble with its two high bits shifted to bits 4–5 (16-bit shifts,
                    // whose carries across bytes the mask drops).
                    let (low_bits, upper_bits) = if h == 0 {
                        (_mm256_slli_epi16(high, 4), _mm256_slli_epi16(high, 2))
                    } else {
                        (high, _mm256_srli_epi16(high, 2))
                    };
                    let low = _mm256_or_si256(
                        _mm256_and_si256(raw, nibble),
                        _mm256_and_si256(low_bits, high_bits),
                    );
                    let upper = _mm256_or_si256(
                        _mm256_and_si256(_mm256_srli_epi16(raw, 4), nibble),
                        _mm256_and_si256(upper_bits, high_bits),
                    );
                    for (r, sums) in sums.iter_mut().enumerate() {
                        let row = &words[r * blocks + block];
                        let (a_low, a_high) =
                            (_mm256_set1_epi32(row[q]), _mm256_set1_epi32(row[q + 4]));
                        sums[0] = _mm256_add_epi16(sums[0], _mm256_maddubs_epi16(low, a_low));
                        sums[1] = _mm256_add_epi16(sums[1], _mm256_maddubs_epi16(upper, a_high));
                    }
                }
                // SAFETY: `scales[j]` is 2 × 16 bytes and `d` 16 f32 inside the tile; the
                // loads take 8 of either at a time, unaligned.
                let (sc, d) = unsafe {
                    let sc = tile.scales[j].as_ptr().cast::<i8>();
                    (
                        [
                            _mm_loadl_epi64(sc.add(8 * h).cast()),
                            _mm_loadl_epi64(sc.add(16 + 8 * h).cast()),
                        ],
                        _mm256_loadu_ps(tile.d.as_ptr().add(8 * h)),
                    )
                };
                // Each half's scale in both i16 halves of its row's lane, for `vpmaddwd`.
                let (first, second) = (_mm256_cvtepi8_epi32(sc[0]), _mm256_cvtepi8_epi32(sc[1]));
                let dup = [
                    _mm256_blend_epi16::<0xaa>(first, _mm256_slli_epi32(first, 16)),
                    _mm256_blend_epi16::<0xaa>(second, _mm256_slli_epi32(second, 16)),
                ];
                for (r, acc) in acc.iter_mut().enumerate() {
                    let at = r * blocks + block;
                    // 32 · the pair sums (each at most 1016 in magnitude) of either half.
                    let offsets = [
                        _mm256_slli_epi16(_mm256_set1_epi32(pair_sums[at][0]), 5),
                        _mm256_slli_epi16(_mm256_set1_epi32(pair_sums[at][1]), 5),
                    ];
                    let dot = _mm256_add_epi32(
                        _mm256_madd_epi16(_mm256_sub_epi16(sums[r][0], offsets[0]), dup[0]),
                        _mm256_madd_epi16(_mm256_sub_epi16(sums[r][1], offsets[1]), dup[1]),
                    );
                    let scale = _mm256_mul_ps(d, _mm256_set1_ps(scales[at]));
                    acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), scale, acc[h]);
                }
            }
        }
    }
    // SAFETY: rows `first..first + R` are the caller's.
    unsafe { store_rows(&acc, out, first, stride) }
}

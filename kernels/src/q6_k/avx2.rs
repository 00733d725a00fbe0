//! The Q6_K kernel on AVX2 (see the module above for the arithmetic).

use super::{SUBS, TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx2_frame::avx2_group;
#[cfg(target_arch = "x86_64")]
use crate::avx2_frame::{add_super, offset_dot, signed_half_scales, store_rows, widen_halves};
use crate::tiled::prefetch_part;

/// Activation rows per micro-kernel call. The kernel takes the tile's two halves of 8 rows one
/// after the other, so each row keeps two i16 sums (one per scale) next to two unpacked weight
/// registers.
const MR: usize = 4;

const _: () = assert!(TILE_ROWS == 16);

avx2_group!(Tile, SUBS);

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
    let (nibble, high_bits) = (_mm256_set1_epi8(0x0f), _mm256_set1_epi8(0x30));
    let mut acc = [[_mm256_setzero_ps(); 2]; R];
    for (s, tile) in tiles.iter().enumerate() {
        // Per row and half: the halves' sums times their scales in i32, exact, as the
        // super-block's activations share one scale (ggml's Q8_K).
        let mut dots = [[_mm256_setzero_si256(); 2]; R];
        for j in 0..SUBS {
            prefetch_part::<R, SUBS, _>(tile, j);
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
                    // SAFETY: `ql[j]` is 256 bytes and `qh[j]` 128 at 32-byte aligned offsets
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
                let dup = signed_half_scales(&tile.scales[j], h);
                for (r, dots) in dots.iter_mut().enumerate() {
                    let at = r * blocks + block;
                    // Less 32 · the pair sums (each at most 1016 in magnitude).
                    let dot = offset_dot::<5>(sums[r], pair_sums[at], dup);
                    dots[h] = _mm256_add_epi32(dots[h], dot);
                }
            }
        }
        let d = widen_halves(&tile.d);
        for (r, (acc, dots)) in acc.iter_mut().zip(dots).enumerate() {
            add_super(acc, dots, d, scales[r * blocks + s * SUBS]);
        }
    }
    // SAFETY: rows `first..first + R` are the caller's.
    unsafe { store_rows(&acc, out, first, stride) }
}

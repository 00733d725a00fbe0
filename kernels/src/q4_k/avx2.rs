//! The Q4_K kernel on AVX2 (see the module above for the arithmetic).

use super::{SUBS, TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx2_frame::avx2_group;
#[cfg(target_arch = "x86_64")]
use crate::avx2_frame::{nibble_sums, store_rows, widen_halves};
use crate::tiled::prefetch_part;

/// Activation rows per micro-kernel call, as for Q4_0: their i16 sums and f32 accumulators
/// for both halves of the tile, with the unpacked weights, about fill the sixteen registers.
const MR: usize = 3;

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
    let (words, scales, offsets, _) = acts.rows(first..first + R);
    let mut acc = [[_mm256_setzero_ps(); 2]; R];
    for (s, tile) in tiles.iter().enumerate() {
        let (d, dmin) = (widen_halves(&tile.d), widen_halves(&tile.dmin));
        for j in 0..SUBS {
            prefetch_part::<R, SUBS, _>(tile, j);
            let block = s * SUBS + j;
            // SAFETY: `qs[j]` is sub-block `j`'s 256 bytes of nibbles, 64-byte aligned.
            let sums = unsafe { nibble_sums::<R>(tile.qs[j].as_ptr(), words, blocks, block) };
            // SAFETY: `scales[j]` and `mins[j]` are 16 bytes each inside the tile; the loads
            // take 8 of them at a time, unaligned.
            let (sc, mins) = unsafe {
                let (sc, mins) = (
                    tile.scales[j].as_ptr().cast::<__m128i>(),
                    tile.mins[j].as_ptr().cast::<__m128i>(),
                );
                (
                    [
                        _mm_loadl_epi64(sc),
                        _mm_loadl_epi64(sc.cast::<u8>().add(8).cast()),
                    ],
                    [
                        _mm_loadl_epi64(mins),
                        _mm_loadl_epi64(mins.cast::<u8>().add(8).cast()),
                    ],
                )
            };
            let (sc, mins) = (
                [_mm256_cvtepu8_epi32(sc[0]), _mm256_cvtepu8_epi32(sc[1])],
                [_mm256_cvtepu8_epi32(mins[0]), _mm256_cvtepu8_epi32(mins[1])],
            );
            // The scale in both i16 halves of its row's lane, for `vpmaddwd`.
            let sc = [
                _mm256_or_si256(sc[0], _mm256_slli_epi32(sc[0], 16)),
                _mm256_or_si256(sc[1], _mm256_slli_epi32(sc[1], 16)),
            ];
            let mins = [
                _mm256_mul_ps(dmin[0], _mm256_cvtepi32_ps(mins[0])),
                _mm256_mul_ps(dmin[1], _mm256_cvtepi32_ps(mins[1])),
            ];
            for (r, acc) in acc.iter_mut().enumerate() {
                let at = r * blocks + block;
                // `offsets` holds −128 · Σa.
                let a_sum = (-(offsets[at] / 128)) as f32 * scales[at];
                let (a_scale, a_sum) = (_mm256_set1_ps(scales[at]), _mm256_set1_ps(a_sum));
                for h in 0..2 {
                    let dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(sums[r][h], sc[h]));
                    acc[h] = _mm256_fmadd_ps(dot, _mm256_mul_ps(d[h], a_scale), acc[h]);
                    acc[h] = _mm256_fnmadd_ps(mins[h], a_sum, acc[h]);
                }
            }
        }
    }
    // SAFETY: rows `first..first + R` are the caller's.
    unsafe { store_rows(&acc, out, first, stride) }
}

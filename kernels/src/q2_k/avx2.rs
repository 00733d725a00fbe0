//! The Q2_K kernel on AVX2 (see the module above for the arithmetic).

use super::{SUBS, TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx2_frame::avx2_group;
#[cfg(target_arch = "x86_64")]
use crate::avx2_frame::{store_rows, widen_halves};
use crate::tiled::prefetch_part;
#[cfg(target_arch = "x86_64")]
use crate::two_bits::values256;

/// Activation rows per micro-kernel call. The kernel takes the tile's two halves of 8 rows one
/// after the other, so each row keeps two i16 sums (one per scale) and one accumulator per
/// half, next to the plane word and the values unpacked from it.
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
    let nibble = _mm256_set1_epi32(0x0f);
    let mut acc = [[_mm256_setzero_ps(); 2]; R];
    for (s, tile) in tiles.iter().enumerate() {
        let (tile_d, tile_dmin) = (widen_halves(&tile.d), widen_halves(&tile.dmin));
        for j in 0..SUBS {
            prefetch_part::<R, SUBS, _>(tile, j);
            let block = s * SUBS + j;
            let low = tile.low[j].as_ptr().cast::<__m256i>();
            // The tile's rows 0–7, then 8–15: each half of a 64-byte plane word is one of them.
            for h in 0..2 {
                // `[row][values 0..16 or 16..32]`, i16 sums.
                let mut sums = [[_mm256_setzero_si256(); 2]; R];
                for w in 0..2 {
                    // SAFETY: `low[j]` is 128 bytes at a 64-byte aligned offset of the tile;
                    // word `w` is its 64 bytes from `w * 64` (rows 0–7, then 8–15).
                    let raw = unsafe { _mm256_load_si256(low.add(2 * w + h)) };
                    for k in 0..4 {
                        let q = values256(raw, k);
                        for (r, sums) in sums.iter_mut().enumerate() {
                            let a = _mm256_set1_epi32(words[r * blocks + block][w + 2 * k]);
                            sums[k / 2] = _mm256_add_epi16(sums[k / 2], _mm256_maddubs_epi16(q, a));
                        }
                    }
                }
                // SAFETY: `scales[j]` is 2 × 16 bytes inside the tile; the loads take 8 at a
                // time, unaligned.
                let bytes = unsafe {
                    let bytes = tile.scales[j].as_ptr().cast::<u8>();
                    [
                        _mm_loadl_epi64(bytes.add(8 * h).cast()),
                        _mm_loadl_epi64(bytes.add(16 + 8 * h).cast()),
                    ]
                };
                let (d, dmin) = (tile_d[h], tile_dmin[h]);
                let bytes = [
                    _mm256_cvtepu8_epi32(bytes[0]),
                    _mm256_cvtepu8_epi32(bytes[1]),
                ];
                // Each half's `sc` and `m` in both i16 halves of its row's lane, for
                // `vpmaddwd` (both are below 16, so an `or` duplicates them).
                let dup = |x: __m256i| _mm256_or_si256(x, _mm256_slli_epi32(x, 16));
                let sc = [
                    dup(_mm256_and_si256(bytes[0], nibble)),
                    dup(_mm256_and_si256(bytes[1], nibble)),
                ];
                let mins = [
                    dup(_mm256_srli_epi32(bytes[0], 4)),
                    dup(_mm256_srli_epi32(bytes[1], 4)),
                ];
                for (r, acc) in acc.iter_mut().enumerate() {
                    let at = r * blocks + block;
                    let dot = _mm256_add_epi32(
                        _mm256_madd_epi16(sums[r][0], sc[0]),
                        _mm256_madd_epi16(sums[r][1], sc[1]),
                    );
                    // `m · Σa` over either half, from the activations' pair sums.
                    let min_dot = _mm256_add_epi32(
                        _mm256_madd_epi16(_mm256_set1_epi32(pair_sums[at][0]), mins[0]),
                        _mm256_madd_epi16(_mm256_set1_epi32(pair_sums[at][1]), mins[1]),
                    );
                    let a_scale = _mm256_set1_ps(scales[at]);
                    acc[h] =
                        _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(d, a_scale), acc[h]);
                    acc[h] = _mm256_fnmadd_ps(
                        _mm256_cvtepi32_ps(min_dot),
                        _mm256_mul_ps(dmin, a_scale),
                        acc[h],
                    );
                }
            }
        }
    }
    // SAFETY: rows `first..first + R` are the caller's.
    unsafe { store_rows(&acc, out, first, stride) }
}

//! The Q4_K kernel on AVX-512 VNNI: per sub-block, the nibbles times one activation block in
//! `vpdpbusd` as for Q4_0 (see `q4_0::avx512`), whose i32 sums are exact, then
//! `d · sc · a_scale` times that less `dmin · m · a_scale · Σa` into f32 accumulators.

use super::{SUBS, TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx512_frame::avx512_group;
#[cfg(target_arch = "x86_64")]
use crate::avx512_frame::{nibbles512, store_rows512, widen16};
use crate::tiled::prefetch_part;

/// Activation rows per micro-kernel call: 8 unpacked weight registers, the sub-block's scales
/// and mins, and an accumulator and two sums per row fit the 32 zmm registers.
const MR: usize = 6;

const _: () = assert!(TILE_ROWS == 16);

avx512_group!(Tile, SUBS);

/// # Safety
/// As for [`group`], for rows `first..first + R`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn micro_kernel<const R: usize>(
    tiles: &[Tile],
    acts: &QuantizedRows,
    out: *mut f32,
    stride: usize,
    first: usize,
) {
    use std::arch::x86_64::*;
    let blocks = acts.blocks;
    let (words, scales, offsets, _) = acts.rows(first..first + R);
    let mut acc = [_mm512_setzero_ps(); R];
    for (s, tile) in tiles.iter().enumerate() {
        let (d, dmin) = (widen16(&tile.d), widen16(&tile.dmin));
        for j in 0..SUBS {
            prefetch_part::<R, SUBS, _>(tile, j);
            let block = s * SUBS + j;
            // SAFETY: `qs[j]` is 256 bytes at a 64-byte aligned offset of the tile.
            let (low, high) = unsafe { nibbles512(tile.qs[j].as_ptr()) };
            // SAFETY: `scales[j]` and `mins[j]` are 16 bytes each inside the tile.
            let (sc, mins) = unsafe {
                (
                    _mm_loadu_si128(tile.scales[j].as_ptr().cast()),
                    _mm_loadu_si128(tile.mins[j].as_ptr().cast()),
                )
            };
            let sc = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(sc)));
            let mins = _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(mins)));
            for (r, acc) in acc.iter_mut().enumerate() {
                let at = r * blocks + block;
                let a = &words[at];
                let (mut even, mut odd) = (_mm512_setzero_si512(), _mm512_setzero_si512());
                for q in 0..4 {
                    even = _mm512_dpbusd_epi32(even, low[q], _mm512_set1_epi32(a[q]));
                    odd = _mm512_dpbusd_epi32(odd, high[q], _mm512_set1_epi32(a[q + 4]));
                }
                let dot = _mm512_cvtepi32_ps(_mm512_add_epi32(even, odd));
                // `offsets` holds −128 · Σa.
                let a_sum = (-(offsets[at] / 128)) as f32 * scales[at];
                let a_scale = _mm512_set1_ps(scales[at]);
                *acc = _mm512_fmadd_ps(dot, _mm512_mul_ps(sc, a_scale), *acc);
                *acc = _mm512_fnmadd_ps(mins, _mm512_set1_ps(a_sum), *acc);
            }
        }
    }
    // SAFETY: rows `first..first + R` are the caller's.
    unsafe { store_rows512(&acc, out, first, stride) }
}

//! The Q4_1 kernel on AVX-512 VNNI: the nibbles summed against the activations in `vpdpbusd`
//! as for Q4_0 (exact, in i32; no offset to take out), then `d · a_scale` times that plus
//! `m · a_scale · Σa` into f32 accumulators, `d` and `m` widened from f16 a tile at a time.

use super::{TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx512_frame::avx512_group;
#[cfg(target_arch = "x86_64")]
use crate::avx512_frame::{nibbles512, store_rows512, widen16};
use crate::prefetch::{WeightRequests, prefetch_light};

/// Activation rows per micro-kernel call, as for Q4_0: 8 unpacked weight registers, `d` and
/// `m`, and two sums and an accumulator per row fit the 32 zmm registers.
const MR: usize = 6;

const _: () = assert!(TILE_ROWS == 16);

avx512_group!(Tile, 1);

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
    let requests = WeightRequests::here();
    for (block, tile) in tiles.iter().enumerate() {
        // See `prefetch::WeightRequests`.
        prefetch_light::<R, _>(requests, tile);
        // SAFETY: `qs` is 256 bytes at the 64-byte aligned start of the tile.
        let (low, high) = unsafe { nibbles512(tile.qs.as_ptr()) };
        let (d, m) = (widen16(&tile.d), widen16(&tile.m));
        for (r, acc) in acc.iter_mut().enumerate() {
            let at = r * blocks + block;
            let a = &words[at];
            let (mut even, mut odd) = (_mm512_setzero_si512(), _mm512_setzero_si512());
            for q in 0..4 {
                even = _mm512_dpbusd_epi32(even, low[q], _mm512_set1_epi32(a[q]));
                odd = _mm512_dpbusd_epi32(odd, high[q], _mm512_set1_epi32(a[q + 4]));
            }
            let sum = _mm512_cvtepi32_ps(_mm512_add_epi32(even, odd));
            *acc = _mm512_fmadd_ps(sum, _mm512_mul_ps(d, _mm512_set1_ps(scales[at])), *acc);
            // `offsets` holds −128 · Σa.
            let a_sum = (-(offsets[at] / 128)) as f32 * scales[at];
            *acc = _mm512_fmadd_ps(m, _mm512_set1_ps(a_sum), *acc);
        }
    }
    // SAFETY: rows `first..first + R` are the caller's.
    unsafe { store_rows512(&acc, out, first, stride) }
}

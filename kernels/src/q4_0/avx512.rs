//! The Q4_0 kernel on AVX-512 VNNI. One 64-byte word of a tile holds the same four bytes of
//! all sixteen rows, so its low nibbles meet activation word `q` and its high nibbles word
//! `q + 4` in one `vpdpbusd` each: the nibbles are the unsigned operand as they are (0..=15),
//! the activations the signed one, and the i32 lanes cannot overflow. The accumulator starts
//! at `−8 · Σa`, which takes the nibbles' offset of 8 back out.

use super::{TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx512_frame::avx512_group;
#[cfg(target_arch = "x86_64")]
use crate::avx512_frame::{nibbles512, store_rows512, widen16};
use crate::prefetch::{WeightRequests, prefetch_light};

/// Activation rows per micro-kernel call: 8 unpacked weight registers, the scales, and two
/// accumulators and a sum per row fit the 32 zmm registers.
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
        // SAFETY: `qs` is 256 bytes at the start of the tile.
        let (low, high) = unsafe { nibbles512(tile.qs.as_ptr()) };
        let weight_scales = widen16(&tile.scales);
        for (r, acc) in acc.iter_mut().enumerate() {
            let at = r * blocks + block;
            let a = &words[at];
            // `offsets` holds −128 · Σa; the nibbles' −8 needs −8 · Σa, exactly a sixteenth.
            let mut even = _mm512_set1_epi32(offsets[at] / 16);
            let mut odd = _mm512_setzero_si512();
            for q in 0..4 {
                even = _mm512_dpbusd_epi32(even, low[q], _mm512_set1_epi32(a[q]));
                odd = _mm512_dpbusd_epi32(odd, high[q], _mm512_set1_epi32(a[q + 4]));
            }
            let sum = _mm512_cvtepi32_ps(_mm512_add_epi32(even, odd));
            let scale = _mm512_mul_ps(weight_scales, _mm512_set1_ps(scales[at]));
            *acc = _mm512_fmadd_ps(sum, scale, *acc);
        }
    }
    // SAFETY: rows `first..first + R` are the caller's.
    unsafe { store_rows512(&acc, out, first, stride) }
}

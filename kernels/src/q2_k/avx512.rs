//! The Q2_K kernel on AVX-512 VNNI. A 64-byte plane word holds all sixteen rows; shifted and
//! masked, it gives the 2-bit values of four activation words, each the unsigned operand of a
//! `vpdpbusd`. Each 16-value half of a sub-block sums into its own i32 accumulator (exact),
//! then meets `d · sc` in f32, less `dmin · m` times the half's `Σa`, and the activation scale.

use super::{SUBS, TILE_ROWS, Tile};
use crate::activations::{QuantizedRows, half_sum};
use crate::avx512_frame::avx512_group;
#[cfg(target_arch = "x86_64")]
use crate::avx512_frame::{store_rows512, widen16};
use crate::tiled::prefetch_part;
#[cfg(target_arch = "x86_64")]
use crate::two_bits::values512;

/// Activation rows per micro-kernel call: two sums and an accumulator per row, next to the
/// plane word, the values unpacked from it and the sub-block's scales and mins.
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
    let (words, scales, _, pair_sums) = acts.rows(first..first + R);
    let nibble = _mm512_set1_epi32(0x0f);
    let mut acc = [_mm512_setzero_ps(); R];
    for (s, tile) in tiles.iter().enumerate() {
        let (d, dmin) = (widen16(&tile.d), widen16(&tile.dmin));
        for j in 0..SUBS {
            prefetch_part::<R, SUBS, _>(tile, j);
            let block = s * SUBS + j;
            let low = tile.low[j].as_ptr().cast::<__m512i>();
            // `[row][values 0..16 or 16..32]`.
            let mut sums = [[_mm512_setzero_si512(); 2]; R];
            for w in 0..2 {
                // SAFETY: `low[j]` is 128 bytes at a 64-byte aligned offset of the tile; word
                // `w` is its 64 bytes from `w * 64`.
                let raw = unsafe { _mm512_load_si512(low.add(w)) };
                for k in 0..4 {
                    let q = values512(raw, k);
                    for (r, sums) in sums.iter_mut().enumerate() {
                        let a = _mm512_set1_epi32(words[r * blocks + block][w + 2 * k]);
                        sums[k / 2] = _mm512_dpbusd_epi32(sums[k / 2], q, a);
                    }
                }
            }
            // SAFETY: `scales[j]` is 2 × 16 bytes inside the tile.
            let bytes = unsafe {
                let bytes = tile.scales[j].as_ptr().cast::<u8>();
                [
                    _mm512_cvtepu8_epi32(_mm_loadu_si128(bytes.cast())),
                    _mm512_cvtepu8_epi32(_mm_loadu_si128(bytes.add(16).cast())),
                ]
            };
            let sc =
                bytes.map(|b| _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_and_si512(b, nibble))));
            let mins =
                bytes.map(|b| _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(_mm512_srli_epi32(b, 4))));
            for (r, acc) in acc.iter_mut().enumerate() {
                let at = r * blocks + block;
                let a_sums = pair_sums[at].map(|pairs| _mm512_set1_ps(half_sum(pairs) as f32));
                let mut dot = _mm512_mul_ps(_mm512_cvtepi32_ps(sums[r][1]), sc[1]);
                dot = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[r][0]), sc[0], dot);
                dot = _mm512_fnmadd_ps(mins[0], a_sums[0], dot);
                dot = _mm512_fnmadd_ps(mins[1], a_sums[1], dot);
                *acc = _mm512_fmadd_ps(dot, _mm512_set1_ps(scales[at]), *acc);
            }
        }
    }
    // SAFETY: rows `first..first + R` are the caller's.
    unsafe { store_rows512(&acc, out, first, stride) }
}

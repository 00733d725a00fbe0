//! The Q3_K kernel on AVX-512 VNNI. A 64-byte plane word and the sub-block's 64 bytes of high
//! bits each hold all sixteen rows, a row's four bytes in its own 32-bit lane; shifted and
//! masked, they give the 3-bit values of four activation words, each the unsigned operand of a
//! `vpdpbusd`. Each 16-value half of a sub-block sums into its own i32 accumulator started at
//! `−4 · Σa` over that half, which takes the values' offset of 4 out exactly. The halves' sums
//! times their scales are added in i32 over the super-block, whose activations share one
//! scale (ggml's Q8_K), and turned to f32 once.

use super::{SUBS, TILE_ROWS, Tile};
use crate::activations::{QuantizedRows, half_sum};
use crate::avx512_frame::avx512_group;
#[cfg(target_arch = "x86_64")]
use crate::avx512_frame::{
    add_scaled_halves, add_super, store_rows512, widen_half_scales, widen16,
};
use crate::prefetch::{WeightRequests, prefetch_part};
#[cfg(target_arch = "x86_64")]
use crate::two_bits::values512;

/// Activation rows per micro-kernel call: two sums and an accumulator per row, next to the
/// plane word, the high bits, the values unpacked from them and the sub-block's scales.
const MR: usize = 6;

const _: () = assert!(TILE_ROWS == 16);

avx512_group!(Tile, SUBS);

/// The high bits of a sub-block, bit `i` of each byte (0..8) moved to bit 2 and masked (as
/// `avx2::high_bit` does for half the rows).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn high_bit(high: std::arch::x86_64::__m512i, i: usize) -> std::arch::x86_64::__m512i {
    use std::arch::x86_64::*;
    let moved = match i {
        0 => _mm512_slli_epi16(high, 2),
        1 => _mm512_slli_epi16(high, 1),
        2 => high,
        3 => _mm512_srli_epi16(high, 1),
        4 => _mm512_srli_epi16(high, 2),
        5 => _mm512_srli_epi16(high, 3),
        6 => _mm512_srli_epi16(high, 4),
        _ => _mm512_srli_epi16(high, 5),
    };
    _mm512_and_si512(moved, _mm512_set1_epi8(4))
}

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
    let mut acc = [_mm512_setzero_ps(); R];
    let requests = WeightRequests::here();
    for (s, tile) in tiles.iter().enumerate() {
        let mut dots = [_mm512_setzero_si512(); R];
        for j in 0..SUBS {
            prefetch_part::<R, SUBS, _>(requests, tile, j);
            let block = s * SUBS + j;
            let low = tile.low[j].as_ptr().cast::<__m512i>();
            // SAFETY: `high[j]` is 64 bytes inside the tile (32-byte aligned; the load is
            // unaligned).
            let high = unsafe { _mm512_loadu_si512(tile.high[j].as_ptr().cast()) };
            // `[row][values 0..16 or 16..32]`, less 4 · Σa over each.
            let mut sums: [[__m512i; 2]; R] = std::array::from_fn(|r| {
                pair_sums[r * blocks + block].map(|pairs| _mm512_set1_epi32(-4 * half_sum(pairs)))
            });
            for w in 0..2 {
                // SAFETY: `low[j]` is 128 bytes at a 32-byte aligned offset of the tile; word
                // `w` is its 64 bytes from `w * 64`.
                let raw = unsafe { _mm512_loadu_si512(low.add(w)) };
                for k in 0..4 {
                    let q = _mm512_or_si512(values512(raw, k), high_bit(high, 4 * w + k));
                    for (r, sums) in sums.iter_mut().enumerate() {
                        let a = _mm512_set1_epi32(words[r * blocks + block][w + 2 * k]);
                        sums[k / 2] = _mm512_dpbusd_epi32(sums[k / 2], q, a);
                    }
                }
            }
            let sc = widen_half_scales(&tile.scales[j]);
            for (dots, sums) in dots.iter_mut().zip(sums) {
                *dots = add_scaled_halves(*dots, sums, sc);
            }
        }
        let d = widen16(&tile.d);
        for (r, acc) in acc.iter_mut().enumerate() {
            *acc = add_super(*acc, dots[r], d, scales[r * blocks + s * SUBS]);
        }
    }
    // SAFETY: rows `first..first + R` are the caller's.
    unsafe { store_rows512(&acc, out, first, stride) }
}

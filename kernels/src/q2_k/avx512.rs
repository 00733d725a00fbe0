//! The Q2_K kernel on AVX-512 VNNI. A 64-byte plane word holds all sixteen rows; shifted and
//! masked, it gives the 2-bit values of four activation words, each the unsigned operand of a
//! `vpdpbusd`. Each 16-value half of a sub-block sums into its own i32 accumulator (exact, and
//! at most 16 · 3 · 127 in magnitude, so it is also its lane's low i16). The super-block's
//! activations share one scale (ggml's Q8_K), so both terms add up in i32 over it, exactly:
//! each half's sum times its `sc` in a `vpdpwssd` (`sc` in the low i16 of a row's lane, the
//! high i16 zero), and both halves' `Σa` times their `m` in one more (the first half's in the
//! low i16s, the second's in the high). Only then do they meet `d` and `dmin` in f32, once per
//! super-block.

use super::{SUBS, TILE_ROWS, Tile};
use crate::activations::{QuantizedRows, half_sum};
use crate::avx512_frame::avx512_group;
#[cfg(target_arch = "x86_64")]
use crate::avx512_frame::{add_super, store_rows512, widen_bytes16, widen16};
use crate::prefetch::{WeightRequests, prefetch_part};
#[cfg(target_arch = "x86_64")]
use crate::two_bits::values512;

/// Activation rows per micro-kernel call: two sums, two super-block sums and an accumulator
/// per row, next to the plane word, the values unpacked from it and the sub-block's scales and
/// mins; the accumulators, touched once per super-block, are the ones that spill.
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
    let requests = WeightRequests::here();
    for (s, tile) in tiles.iter().enumerate() {
        // Per row: `Σ sc · (q · a)` and `Σ m · Σa` over the super-block's halves.
        let (mut dots, mut mins) = ([_mm512_setzero_si512(); R], [_mm512_setzero_si512(); R]);
        for j in 0..SUBS {
            prefetch_part::<R, SUBS, _>(requests, tile, j);
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
            let bytes = tile.scales[j].each_ref().map(|b| widen_bytes16(b));
            let sc = bytes.map(|b| _mm512_and_si512(b, nibble));
            // The halves' mins, the first in the low i16 of a row's lane, the second in the
            // high one.
            let m = _mm512_or_si512(
                _mm512_srli_epi32(bytes[0], 4),
                _mm512_slli_epi32(_mm512_srli_epi32(bytes[1], 4), 16),
            );
            for (r, (dots, mins)) in dots.iter_mut().zip(&mut mins).enumerate() {
                let [first, second] = pair_sums[r * blocks + block].map(half_sum);
                let a_sums = (first & 0xffff) | (second << 16);
                for h in 0..2 {
                    *dots = _mm512_dpwssd_epi32(*dots, sums[r][h], sc[h]);
                }
                *mins = _mm512_dpwssd_epi32(*mins, _mm512_set1_epi32(a_sums), m);
            }
        }
        let (d, dmin) = (widen16(&tile.d), widen16(&tile.dmin));
        for (r, acc) in acc.iter_mut().enumerate() {
            let a_scale = scales[r * blocks + s * SUBS];
            *acc = add_super(*acc, dots[r], d, a_scale);
            let min_scale = _mm512_mul_ps(dmin, _mm512_set1_ps(a_scale));
            *acc = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(mins[r]), min_scale, *acc);
        }
    }
    // SAFETY: rows `first..first + R` are the caller's.
    unsafe { store_rows512(&acc, out, first, stride) }
}

//! The Q4_K kernel on AVX-512 VNNI. Per sub-block, the nibbles times one activation block in
//! `vpdpbusd` as for Q4_0 (see `q4_0::avx512`), whose i32 sums are exact; the activations of a
//! K-quant matmul share one scale per super-block (see `activations`), so the sub-blocks'
//! sums, times their 6-bit scales, and the activations' block sums, times their 6-bit mins,
//! are added in i32 over the whole super-block, exactly, and only then turned to f32:
//! `d · a_scale` times the first less `dmin · a_scale` times the second.

use super::{SUBS, TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx512_frame::avx512_group;
#[cfg(target_arch = "x86_64")]
use crate::avx512_frame::{MinPairs, SuperSums, scale_pairs, store_rows512, widen16};
use crate::prefetch::{WeightRequests, prefetch_part};

/// Activation rows per micro-kernel call: a row's accumulator and its two i32 sums, times 6,
/// beside the 8 unpacked weight registers and the sub-block's scales and mins, fit the 32 zmm
/// registers.
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
    let (low_nibbles, high_nibbles) = (_mm512_set1_epi8(0x0f), _mm512_set1_epi8(0xf0u8 as i8));
    let requests = WeightRequests::here();
    for (s, tile) in tiles.iter().enumerate() {
        let mut sums = [SuperSums::new(); R];
        for j in 0..SUBS {
            prefetch_part::<R, SUBS, _>(requests, tile, j);
            let block = s * SUBS + j;
            let qs = tile.qs[j].as_ptr().cast::<__m512i>();
            // SAFETY: `qs[j]` is 256 bytes at a 64-byte aligned offset of the tile.
            let raw: [__m512i; 4] =
                std::array::from_fn(|q| unsafe { _mm512_load_si512(qs.add(q)) });
            // The high nibbles stay in place, 16 times their value: their products are exact
            // multiples of 16, taken out once per sub-block.
            let low = raw.map(|raw| _mm512_and_si512(raw, low_nibbles));
            let high = raw.map(|raw| _mm512_and_si512(raw, high_nibbles));
            let sc = scale_pairs(&tile.scales[j]);
            for (r, sums) in sums.iter_mut().enumerate() {
                let at = r * blocks + block;
                let a = &words[at];
                let (mut even, mut odd) = (_mm512_setzero_si512(), _mm512_setzero_si512());
                for q in 0..4 {
                    even = _mm512_dpbusd_epi32(even, low[q], _mm512_set1_epi32(a[q]));
                    odd = _mm512_dpbusd_epi32(odd, high[q], _mm512_set1_epi32(a[q + 4]));
                }
                sums.add_halves(even, odd, sc);
            }
        }
        let mins = MinPairs::new(&tile.mins);
        let (d, dmin) = (widen16(&tile.d), widen16(&tile.dmin));
        for (r, acc) in acc.iter_mut().enumerate() {
            let first_block = r * blocks + s * SUBS;
            sums[r].add_mins(&mins, &offsets[first_block..first_block + SUBS]);
            *acc = sums[r].into_acc(*acc, d, dmin, scales[first_block]);
        }
    }
    // SAFETY: rows `first..first + R` are the caller's.
    unsafe { store_rows512(&acc, out, first, stride) }
}

//! The Q5_K kernel on AVX-512 VNNI: per sub-block, the 5-bit values (nibbles with their fifth
//! bits moved to bit 4, as in `q5_0::avx512`) times one activation block in `vpdpbusd`, whose
//! i32 sums are exact, then as for Q4_K: the sub-blocks' sums times their scales, and the
//! mins times the activations' block sums, added in i32 over the super-block, and scaled once
//! by `d · a_scale` and `dmin · a_scale` (see `avx512_frame::SuperSums`).
//!
//! Prompt rows take the tiles unpacked first, four at a time, each sub-block's eight words of
//! 5-bit values as the `vpdpbusd`s read them (`widened::UnpackedTile`): the micro-kernel
//! merged the fifth bits of every sub-block once per six rows.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::__m512i;

use super::{SUBS, TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx512_frame::avx512_group;
#[cfg(target_arch = "x86_64")]
use crate::avx512_frame::{
    MinPairs, SuperSums, load_rows512, store_rows512, widen_bytes16, widen16,
};
#[cfg(target_arch = "x86_64")]
use crate::fifth_bits::FifthBits512;
use crate::prefetch::{WeightRequests, prefetch_part};
#[cfg(target_arch = "x86_64")]
use crate::q8_0::Sums;
#[cfg(target_arch = "x86_64")]
use crate::widened::{Run, SubBlockWords};

/// Activation rows per micro-kernel call: 8 unpacked weight registers, the sub-block's scales
/// and mins, and per row an accumulator and the super-block's two sums fit the 32 zmm
/// registers.
const MR: usize = 6;

/// Tiles a prompt call unpacks at a time: 16 KiB of `widened::UnpackedTile`s on the stack.
const RUN_TILES: usize = 4;

const _: () = assert!(TILE_ROWS == 16);

avx512_group!(Tile, unpacked in runs of RUN_TILES);

#[cfg(target_arch = "x86_64")]
impl SubBlockWords for Tile {
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn words(&self, j: usize) -> ([__m512i; 4], [__m512i; 4]) {
        use std::arch::x86_64::*;
        let qs = self.qs[j].as_ptr().cast::<__m512i>();
        // SAFETY: `qh[j]` is 64 bytes at a 64-byte aligned offset of the tile, in the byte
        // order of a `qs` word.
        let qh = unsafe { _mm512_load_si512(self.qh[j].as_ptr().cast()) };
        let mut fifths = FifthBits512::new(qh);
        let (mut low, mut high) = ([_mm512_setzero_si512(); 4], [_mm512_setzero_si512(); 4]);
        for q in 0..4 {
            // SAFETY: `qs[j]` is 256 bytes at a 64-byte aligned offset of the tile; word `q`
            // is its 64 bytes from `q * 64`.
            let raw = unsafe { _mm512_load_si512(qs.add(q)) };
            (low[q], high[q]) = fifths.next_word(raw);
        }
        (low, high)
    }
}

/// # Safety
/// As for [`group`], for rows `first..first + R` and the run's super-blocks; with
/// [`Sums::Resumed`], `out` holds the rows' sums over the super-blocks before the run's.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn micro_kernel<const R: usize>(
    run: &Run<'_, impl SubBlockWords, Tile>,
    acts: &QuantizedRows,
    out: *mut f32,
    stride: usize,
    first: usize,
) {
    use std::arch::x86_64::*;
    let blocks = acts.blocks;
    let (words, scales, offsets, _) = acts.rows(first..first + R);
    let mut acc = match run.sums {
        Sums::Fresh => [_mm512_setzero_ps(); R],
        // SAFETY: rows `first..first + R` are the caller's, and hold their sums so far.
        Sums::Resumed => unsafe { load_rows512(out, first, stride) },
    };
    let requests = WeightRequests::here();
    for (s, (words_of, tile)) in run.words.iter().zip(run.tiles).enumerate() {
        let s = run.first + s;
        let mut sums = [SuperSums::new(); R];
        for j in 0..SUBS {
            prefetch_part::<R, SUBS, _>(requests, tile, j);
            let block = s * SUBS + j;
            // SAFETY: `j < SUBS`; the CPU has AVX-512 F/BW.
            let (low, high) = unsafe { words_of.words(j) };
            let sc = widen_bytes16(&tile.scales[j]);
            for (r, sums) in sums.iter_mut().enumerate() {
                let at = r * blocks + block;
                let a = &words[at];
                let (mut even, mut odd) = (_mm512_setzero_si512(), _mm512_setzero_si512());
                for q in 0..4 {
                    even = _mm512_dpbusd_epi32(even, low[q], _mm512_set1_epi32(a[q]));
                    odd = _mm512_dpbusd_epi32(odd, high[q], _mm512_set1_epi32(a[q + 4]));
                }
                sums.add_dot(_mm512_add_epi32(even, odd), sc);
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

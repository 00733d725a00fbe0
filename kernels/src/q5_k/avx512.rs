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
use crate::widened::{Run, SubBlockWords, UnpackedTile};

/// Activation rows per micro-kernel call: 8 unpacked weight registers, the sub-block's scales
/// and mins, and per row an accumulator and the super-block's two sums fit the 32 zmm
/// registers.
const MR: usize = 6;

/// Activation rows per pair-kernel call: both groups' two half sums and super-block sum per
/// row, beside a word of each group's halves and the two broadcasts.
const PAIR_MR: usize = 4;

/// Tiles a prompt call unpacks at a time: 16 KiB of `widened::UnpackedTile`s on the stack.
const RUN_TILES: usize = 4;

const _: () = assert!(TILE_ROWS == 16);

avx512_group!(Tile, unpacked in runs of RUN_TILES, with pairs);

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

/// Rows `first..first + R` of both groups of a [`group_pair`], from their tiles unpacked: each
/// activation broadcast feeds a `vpdpbusd` for each group, where [`micro_kernel`]'s feeds one
/// (see `q6_k::avx512`'s pair kernel, which this one follows). The integer sums and the float
/// steps are [`micro_kernel`]'s, and so are the bits.
///
/// # Safety
/// As for [`group_pair`], for rows `first..first + R` and the runs' super-blocks (the same in
/// both); with [`Sums::Resumed`], `out` holds both groups' rows' sums over the super-blocks
/// before the runs'.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn pair_kernel<const R: usize>(
    runs: &[Run<'_, UnpackedTile, Tile>; 2],
    acts: &QuantizedRows,
    out: *mut f32,
    stride: usize,
    first: usize,
) {
    use std::arch::x86_64::*;
    let blocks = acts.blocks;
    let (words, scales, offsets, _) = acts.rows(first..first + R);
    let mut acc: [[__m512; R]; 2] = match runs[0].sums {
        Sums::Fresh => [[_mm512_setzero_ps(); R]; 2],
        // SAFETY: rows `first..first + R` are the caller's, and hold both groups' sums so far.
        Sums::Resumed => [0, TILE_ROWS].map(|c| unsafe { load_rows512(out.add(c), first, stride) }),
    };
    for i in 0..runs[0].words.len() {
        let s = runs[0].first + i;
        let unpacked = runs.each_ref().map(|run| &run.words[i]);
        let tiles = runs.each_ref().map(|run| &run.tiles[i]);
        // `sums[r][g]`: row `r`'s super-block sums for group `g`.
        let mut sums = [[SuperSums::new(); 2]; R];
        for j in 0..SUBS {
            let block = s * SUBS + j;
            // `halves[r][g]`: row `r`'s sums over the sub-block's two halves for group `g`.
            let mut halves = [[[_mm512_setzero_si512(); 2]; 2]; R];
            for q in 0..4 {
                // SAFETY: `j < SUBS` and `q + 4 < 8`; the CPU has AVX-512 F.
                let (low, high) = unsafe {
                    (
                        [unpacked[0].word(j, q), unpacked[1].word(j, q)],
                        [unpacked[0].word(j, q + 4), unpacked[1].word(j, q + 4)],
                    )
                };
                for (r, halves) in halves.iter_mut().enumerate() {
                    let a = &words[r * blocks + block];
                    let (a_low, a_high) = (_mm512_set1_epi32(a[q]), _mm512_set1_epi32(a[q + 4]));
                    for (g, halves) in halves.iter_mut().enumerate() {
                        halves[0] = _mm512_dpbusd_epi32(halves[0], low[g], a_low);
                        halves[1] = _mm512_dpbusd_epi32(halves[1], high[g], a_high);
                    }
                }
            }
            let sc = [
                widen_bytes16(&tiles[0].scales[j]),
                widen_bytes16(&tiles[1].scales[j]),
            ];
            for (sums, halves) in sums.iter_mut().zip(&halves) {
                for g in 0..2 {
                    sums[g].add_dot(_mm512_add_epi32(halves[g][0], halves[g][1]), sc[g]);
                }
            }
        }
        for g in 0..2 {
            let mins = MinPairs::new(&tiles[g].mins);
            let (d, dmin) = (widen16(&tiles[g].d), widen16(&tiles[g].dmin));
            for (r, sums) in sums.iter_mut().enumerate() {
                let first_block = r * blocks + s * SUBS;
                sums[g].add_mins(&mins, &offsets[first_block..first_block + SUBS]);
                acc[g][r] = sums[g].into_acc(acc[g][r], d, dmin, scales[first_block]);
            }
        }
    }
    for (g, acc) in acc.iter().enumerate() {
        // SAFETY: rows `first..first + R` are the caller's, 32 columns from `out`.
        unsafe { store_rows512(acc, out.add(g * TILE_ROWS), first, stride) }
    }
}

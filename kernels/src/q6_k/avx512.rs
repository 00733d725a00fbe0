//! The Q6_K kernel on AVX-512 VNNI. A 64-byte `ql` word holds all sixteen rows; its 32 bytes
//! of high parts are widened to match (rows 0–7 from their low four bits, rows 8–15 from the
//! high four). The 6-bit values are `vpdpbusd`'s unsigned operand, and each 16-value half of a
//! sub-block (the low nibbles, then the high ones) sums into its own i32 accumulator started
//! at `−32 · Σa` over that half, so that each comes out exact before its own scale applies.
//! The activations of a K-quant matmul share one scale per super-block (see `activations`),
//! so the halves' sums times their i8 scales are added in i32 over the super-block, exactly
//! (at most 16 · 65024 · 128 in magnitude), and turned to f32 once.
//!
//! Prompt rows take the tiles unpacked first, four at a time, each sub-block's eight words as
//! the `vpdpbusd`s read them (`widened::UnpackedTile`): the micro-kernel unpacked every
//! sub-block once per six rows, about a third of a prompt's instructions.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::__m512i;

use super::{SUBS, TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx512_frame::avx512_group;
#[cfg(target_arch = "x86_64")]
use crate::avx512_frame::{
    add_scaled_halves, add_super, half_offsets, pair_rows_start, rows_start, store_pair_rows,
    store_rows512, widen_half_scales, widen16,
};
use crate::prefetch::{WeightRequests, prefetch_part};
#[cfg(target_arch = "x86_64")]
use crate::widened::{Run, SubBlockWords, UnpackedTile};

/// Activation rows per micro-kernel call: 8 unpacked weight registers, the two halves'
/// scales, and an accumulator and two sums per row fit the 32 zmm registers.
const MR: usize = 6;

/// Activation rows per pair-kernel call: both groups' two half sums and super-block sum per
/// row, beside a word of each group's halves and the two broadcasts.
const PAIR_MR: usize = 4;

/// Tiles a prompt call unpacks at a time: 16 KiB of `widened::UnpackedTile`s on the stack.
const RUN_TILES: usize = 4;

const _: () = assert!(TILE_ROWS == 16);

#[cfg(target_arch = "x86_64")]
impl SubBlockWords for Tile {
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn words(&self, j: usize) -> ([__m512i; 4], [__m512i; 4]) {
        use std::arch::x86_64::*;
        let (nibble, high_bits) = (_mm512_set1_epi8(0x0f), _mm512_set1_epi8(0x30));
        let (ql, qh) = (
            self.ql[j].as_ptr().cast::<__m512i>(),
            self.qh[j].as_ptr().cast::<__m256i>(),
        );
        let (mut low, mut upper) = ([_mm512_setzero_si512(); 4], [_mm512_setzero_si512(); 4]);
        for q in 0..4 {
            // SAFETY: `ql[j]` is 256 bytes and `qh[j]` 128 at 32-byte aligned offsets of the
            // tile; word `q` is 64 bytes of `ql` from `q * 64` and 32 of `qh` from `q * 32`.
            let (raw, high) =
                unsafe { (_mm512_loadu_si512(ql.add(q)), _mm256_load_si256(qh.add(q))) };
            // Rows 0–7 keep their high parts in bits 0–3 of `high`, rows 8–15 in bits 4–7:
            // after this, each row's are in bits 0–3 of its own byte (the 16-bit shift's
            // carries land in bits 4–7, which the masks below drop).
            let high =
                _mm512_inserti64x4::<1>(_mm512_castsi256_si512(high), _mm256_srli_epi16(high, 4));
            // Each nibble with its two high bits shifted to bits 4–5.
            low[q] = _mm512_or_si512(
                _mm512_and_si512(raw, nibble),
                _mm512_and_si512(_mm512_slli_epi16(high, 4), high_bits),
            );
            upper[q] = _mm512_or_si512(
                _mm512_and_si512(_mm512_srli_epi16(raw, 4), nibble),
                _mm512_and_si512(_mm512_slli_epi16(high, 2), high_bits),
            );
        }
        (low, upper)
    }
}

avx512_group!(Tile, unpacked in runs of RUN_TILES, with pairs);

/// # Safety
/// As for [`group`], for rows `first..first + R` and the run's super-blocks; with
/// [`Sums::Resumed`](crate::q8_0::Sums::Resumed), `out` holds the rows' sums over the super-blocks before the run's.
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
    let (words, scales, _, pair_sums) = acts.rows(first..first + R);
    // SAFETY: rows `first..first + R` are the caller's, and hold their sums so far where the
    // run resumes them.
    let mut acc = unsafe { rows_start::<R>(run.sums, out, first, stride) };
    let requests = WeightRequests::here();
    for (s, (words_of, tile)) in run.words.iter().zip(run.tiles).enumerate() {
        let s = run.first + s;
        let mut dots = [_mm512_setzero_si512(); R];
        // −32 · Σa for each half of the super-block's blocks: the values' offset of 32.
        let offsets = half_offsets::<R, 5>(pair_sums, blocks, s * SUBS);
        for j in 0..SUBS {
            prefetch_part::<R, SUBS, _>(requests, tile, j);
            let block = s * SUBS + j;
            // SAFETY: `j < SUBS`; the CPU has AVX-512 F/BW.
            let (low, upper) = unsafe { words_of.words(j) };
            let sc = widen_half_scales(&tile.scales[j]);
            for (r, dots) in dots.iter_mut().enumerate() {
                let at = r * blocks + block;
                let a = &words[at];
                let mut sums = [
                    _mm512_set1_epi32(offsets[r][2 * j]),
                    _mm512_set1_epi32(offsets[r][2 * j + 1]),
                ];
                for q in 0..4 {
                    sums[0] = _mm512_dpbusd_epi32(sums[0], low[q], _mm512_set1_epi32(a[q]));
                    sums[1] = _mm512_dpbusd_epi32(sums[1], upper[q], _mm512_set1_epi32(a[q + 4]));
                }
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

/// Rows `first..first + R` of both groups of a [`group_pair`], from their tiles unpacked: each
/// activation broadcast feeds a `vpdpbusd` for each group, where [`micro_kernel`]'s feeds one
/// (a prompt's rows are bound by those broadcasts as much as by the multiplies; see
/// `q8_0::group_pair`). A sub-block is taken a word of each group at a time, so that both
/// groups' sums fit the registers. The integer sums and the float steps are
/// [`micro_kernel`]'s, and so are the bits.
///
/// # Safety
/// As for [`group_pair`], for rows `first..first + R` and the runs' super-blocks (the same in
/// both); with [`Sums::Resumed`](crate::q8_0::Sums::Resumed), `out` holds both groups' rows' sums over the super-blocks
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
    let (words, scales, _, pair_sums) = acts.rows(first..first + R);
    // SAFETY: rows `first..first + R` are the caller's, and hold both groups' sums so far
    // where the run resumes them.
    let mut acc = unsafe { pair_rows_start::<R>(runs[0].sums, out, first, stride) };
    for i in 0..runs[0].words.len() {
        let s = runs[0].first + i;
        let (unpacked, tiles) = (
            runs.each_ref().map(|run| &run.words[i]),
            runs.each_ref().map(|run| &run.tiles[i]),
        );
        // `dots[r][g]`: row `r`'s super-block sum for group `g`.
        let mut dots = [[_mm512_setzero_si512(); 2]; R];
        // −32 · Σa for each half of the super-block's blocks: the values' offset of 32.
        let offsets = half_offsets::<R, 5>(pair_sums, blocks, s * SUBS);
        for j in 0..SUBS {
            let block = s * SUBS + j;
            // `sums[r][g]`: row `r`'s two half sums for group `g`.
            let mut sums: [[[__m512i; 2]; 2]; R] = std::array::from_fn(|r| {
                let halves = [
                    _mm512_set1_epi32(offsets[r][2 * j]),
                    _mm512_set1_epi32(offsets[r][2 * j + 1]),
                ];
                [halves, halves]
            });
            for q in 0..4 {
                // SAFETY: `j < SUBS` and `q + 4 < 8`; the CPU has AVX-512 F.
                let (low, upper) = unsafe {
                    (
                        unpacked.map(|tile| tile.word(j, q)),
                        unpacked.map(|tile| tile.word(j, q + 4)),
                    )
                };
                for (r, sums) in sums.iter_mut().enumerate() {
                    let a = &words[r * blocks + block];
                    let (a_low, a_upper) = (_mm512_set1_epi32(a[q]), _mm512_set1_epi32(a[q + 4]));
                    for (g, sums) in sums.iter_mut().enumerate() {
                        sums[0] = _mm512_dpbusd_epi32(sums[0], low[g], a_low);
                        sums[1] = _mm512_dpbusd_epi32(sums[1], upper[g], a_upper);
                    }
                }
            }
            let sc = tiles.map(|tile| widen_half_scales(&tile.scales[j]));
            for (dots, sums) in dots.iter_mut().zip(&sums) {
                for g in 0..2 {
                    dots[g] = add_scaled_halves(dots[g], sums[g], sc[g]);
                }
            }
        }
        let d = tiles.map(|tile| widen16(&tile.d));
        for (r, dots) in dots.iter().enumerate() {
            for g in 0..2 {
                acc[g][r] = add_super(acc[g][r], dots[g], d[g], scales[r * blocks + s * SUBS]);
            }
        }
    }
    // SAFETY: rows `first..first + R` are the caller's, 32 columns from `out`.
    unsafe { store_pair_rows(&acc, out, first, stride) }
}

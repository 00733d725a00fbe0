//! The AVX-512 VNNI kernels of the K-quants whose sub-blocks have 6-bit scales and mins,
//! Q4_K and Q5_K: per sub-block, the values times one activation block in `vpdpbusd`, a
//! chain for each 16-value half, whose i32 sums are exact; the activations of a K-quant
//! matmul share one scale per super-block (see `activations`), so the sub-blocks' sums, times
//! their scales, and the activations' block sums, times the mins, are added in i32 over the
//! whole super-block, exactly (`avx512_frame::SuperSums`), and only then turned to f32:
//! `d · a_scale` times the first less `dmin · a_scale` times the second. The formats differ
//! only in how their values unpack ([`SubBlockWords`]) and in how a sub-block's halves meet
//! their scales ([`ScaleMinTile::HIGH_IN_PLACE`]).

use std::arch::x86_64::*;

use half::f16;

use crate::activations::{BLOCK, QuantizedRows, SUPER};
use crate::avx512_frame::{
    MinPairs, SuperSums, pair_rows_start, rows_start, scale_pairs, store_pair_rows, store_rows512,
    widen_bytes16, widen16,
};
use crate::prefetch::{WeightRequests, prefetch_part};
use crate::tiled::TILE_ROWS;
use crate::widened::{Run, SubBlockWords, UnpackedTile};

/// Sub-blocks (of one activation block each) per super-block.
const SUBS: usize = SUPER / BLOCK;

/// A 16-row tile of one super-block of Q4_K or Q5_K, as the kernels read it.
pub(crate) trait ScaleMinTile {
    /// Whether the second half's words hold their values sixteen times over (Q4_K's high
    /// nibbles, kept in place), so that each half's sum fits i16 and both meet their scale in
    /// one `vpdpwssd` ([`SuperSums::add_halves`]); otherwise the halves are added and the sum
    /// multiplied ([`SuperSums::add_dot`]).
    const HIGH_IN_PLACE: bool;
    /// Sub-block `j`'s 6-bit scales, a byte per row.
    fn scales(&self, j: usize) -> &[u8; TILE_ROWS];
    /// The eight sub-blocks' 6-bit mins, a byte per row each.
    fn mins(&self) -> &[[u8; TILE_ROWS]; SUBS];
    /// The rows' super-block scales, and those of their mins.
    fn d(&self) -> &[f16; TILE_ROWS];
    fn dmin(&self) -> &[f16; TILE_ROWS];
}

/// Implements [`ScaleMinTile`] for a format's tile type, whose fields `scales`, `mins`, `d`
/// and `dmin` are laid out as the trait gives them.
macro_rules! scale_min_tile {
    ($tile:ty, high_in_place: $high:expr) => {
        impl $crate::scale_min512::ScaleMinTile for $tile {
            const HIGH_IN_PLACE: bool = $high;
            fn scales(&self, j: usize) -> &[u8; $crate::tiled::TILE_ROWS] {
                &self.scales[j]
            }
            fn mins(&self) -> &[[u8; $crate::tiled::TILE_ROWS]; 8] {
                &self.mins
            }
            fn d(&self) -> &[half::f16; $crate::tiled::TILE_ROWS] {
                &self.d
            }
            fn dmin(&self) -> &[half::f16; $crate::tiled::TILE_ROWS] {
                &self.dmin
            }
        }
    };
}
pub(crate) use scale_min_tile;

/// Sub-block `j`'s scales as [`add_sub_block`] takes them for `tile`'s type.
#[inline]
#[target_feature(enable = "avx512f")]
fn sub_block_scales<T: ScaleMinTile>(tile: &T, j: usize) -> __m512i {
    if T::HIGH_IN_PLACE {
        scale_pairs(tile.scales(j))
    } else {
        widen_bytes16(tile.scales(j))
    }
}

/// Adds a sub-block's two half sums times its scales `sc` ([`sub_block_scales`]) to `sums`,
/// as `_tile`'s type has them meet.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
fn add_sub_block<T: ScaleMinTile>(
    _tile: &T,
    sums: &mut SuperSums,
    halves: [__m512i; 2],
    sc: __m512i,
) {
    if T::HIGH_IN_PLACE {
        sums.add_halves(halves[0], halves[1], sc);
    } else {
        sums.add_dot(_mm512_add_epi32(halves[0], halves[1]), sc);
    }
}

/// Rows `first..first + R` of one row group, over a run of its super-blocks: the values from
/// `run.words`, the rest from `run.tiles`.
///
/// # Safety
/// The CPU has AVX-512 F/BW/VNNI; rows `first..first + R` are the caller's to write, 16
/// columns each from `out`, `stride` apart; the run's super-blocks are inside `acts.blocks`;
/// with [`Sums::Resumed`](crate::q8_0::Sums::Resumed), `out` holds the rows' sums over the super-blocks before the run's.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub(crate) unsafe fn micro_kernel<const R: usize>(
    run: &Run<'_, impl SubBlockWords, impl ScaleMinTile>,
    acts: &QuantizedRows,
    out: *mut f32,
    stride: usize,
    first: usize,
) {
    let blocks = acts.blocks;
    let (words, scales, offsets, _) = acts.rows(first..first + R);
    // SAFETY: rows `first..first + R` are the caller's, and hold their sums so far where the
    // run resumes them.
    let mut acc = unsafe { rows_start::<R>(run.sums, out, first, stride) };
    let requests = WeightRequests::here();
    for (s, (words_of, tile)) in run.words.iter().zip(run.tiles).enumerate() {
        let s = run.first + s;
        let mut sums = [SuperSums::new(); R];
        for j in 0..SUBS {
            prefetch_part::<R, SUBS, _>(requests, tile, j);
            let block = s * SUBS + j;
            // SAFETY: `j < SUBS`; the CPU has AVX-512 F/BW.
            let (low, high) = unsafe { words_of.words(j) };
            let sc = sub_block_scales(tile, j);
            for (r, sums) in sums.iter_mut().enumerate() {
                let a = &words[r * blocks + block];
                let mut halves = [_mm512_setzero_si512(); 2];
                for q in 0..4 {
                    halves[0] = _mm512_dpbusd_epi32(halves[0], low[q], _mm512_set1_epi32(a[q]));
                    halves[1] =
                        _mm512_dpbusd_epi32(halves[1], high[q], _mm512_set1_epi32(a[q + 4]));
                }
                add_sub_block(tile, sums, halves, sc);
            }
        }
        let mins = MinPairs::new(tile.mins());
        let (d, dmin) = (widen16(tile.d()), widen16(tile.dmin()));
        for (r, acc) in acc.iter_mut().enumerate() {
            let first_block = r * blocks + s * SUBS;
            sums[r].add_mins(&mins, &offsets[first_block..first_block + SUBS]);
            *acc = sums[r].into_acc(*acc, d, dmin, scales[first_block]);
        }
    }
    // SAFETY: rows `first..first + R` are the caller's.
    unsafe { store_rows512(&acc, out, first, stride) }
}

/// [`micro_kernel`] for two row groups at once, from their tiles unpacked: each activation
/// broadcast feeds a `vpdpbusd` for each group, where [`micro_kernel`]'s feeds one (see
/// `q6_k::avx512`'s pair kernel, which this one follows). A sub-block is taken a word of each
/// group at a time, so that both groups' sums fit the registers. The integer sums and the
/// float steps are [`micro_kernel`]'s, and so are the bits.
///
/// # Safety
/// As for [`micro_kernel`], for both groups' 32 columns from `out` and the runs' super-blocks
/// (the same in both).
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub(crate) unsafe fn pair_kernel<const R: usize>(
    runs: &[Run<'_, UnpackedTile, impl ScaleMinTile>; 2],
    acts: &QuantizedRows,
    out: *mut f32,
    stride: usize,
    first: usize,
) {
    let blocks = acts.blocks;
    let (words, scales, offsets, _) = acts.rows(first..first + R);
    // SAFETY: rows `first..first + R` are the caller's, and hold both groups' sums so far
    // where the run resumes them.
    let mut acc = unsafe { pair_rows_start::<R>(runs[0].sums, out, first, stride) };
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
            let sc = [sub_block_scales(tiles[0], j), sub_block_scales(tiles[1], j)];
            for (sums, halves) in sums.iter_mut().zip(&halves) {
                for g in 0..2 {
                    add_sub_block(tiles[g], &mut sums[g], halves[g], sc[g]);
                }
            }
        }
        for g in 0..2 {
            let mins = MinPairs::new(tiles[g].mins());
            let (d, dmin) = (widen16(tiles[g].d()), widen16(tiles[g].dmin()));
            for (r, sums) in sums.iter_mut().enumerate() {
                let first_block = r * blocks + s * SUBS;
                sums[g].add_mins(&mins, &offsets[first_block..first_block + SUBS]);
                acc[g][r] = sums[g].into_acc(acc[g][r], d, dmin, scales[first_block]);
            }
        }
    }
    // SAFETY: rows `first..first + R` are the caller's, 32 columns from `out`.
    unsafe { store_pair_rows(&acc, out, first, stride) }
}

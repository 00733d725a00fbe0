//! The AVX-512 VNNI kernel: one group of 16 output columns against `MR` activation rows at a
//! time. The eight weight registers of a tile are loaded once and reused by every row, and each
//! row's block sum is split over two accumulators so that the `vpdpbusd` chains overlap.

#[cfg(target_arch = "x86_64")]
use std::borrow::Borrow;
use std::ops::Range;

#[cfg(target_arch = "x86_64")]
use super::{Run, Sums};
use super::{TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
#[cfg(target_arch = "x86_64")]
use crate::avx512_frame::{pair_rows_start, rows_start, store_pair_rows, store_rows512, widen16};
use crate::prefetch::{WeightRequests, prefetch_light};
#[cfg(target_arch = "x86_64")]
use crate::tiled::in_row_steps;

/// Activation rows per call of the micro-kernel: 8 weight + 1 scale + 6 accumulator registers
/// and the temporaries fit the 32 zmm registers with room to spare.
const MR: usize = 6;

// One tile's 16 rows are the 16 i32 lanes of a zmm register.
const _: () = assert!(TILE_ROWS == 16);

// The AVX-512 kernels of the formats narrower than a byte send prompt rows to
// `group_blocks`, on their tiles widened to this layout (`widened`).
super::blocks_frame!("AVX-512 F/BW/VNNI");

/// [`group`] for two row groups at once, their 32 output columns from `out`: `tiles` holds
/// the first group's tiles, then the second's. Each activation broadcast feeds a `vpdpbusd`
/// for each group, where the one-group kernel's feeds one: a prompt's rows are bound by those
/// loads as much as by the multiplies (in a trial, reusing two broadcasts for all eight words
/// made the one-group kernel 13% faster). The integer sums are the one-group kernel's and
/// the float steps the same, so are the bits.
///
/// # Safety
/// As for [`group`], with `tiles` holding `2 · acts.blocks` tiles and `out` valid for 32
/// columns.
#[cfg(target_arch = "x86_64")]
pub(super) unsafe fn group_pair(
    tiles: &[Tile],
    acts: &QuantizedRows,
    rows: Range<usize>,
    out: *mut f32,
    stride: usize,
) {
    assert_eq!(tiles.len(), 2 * acts.blocks);
    let (first, second) = tiles.split_at(acts.blocks);
    // SAFETY: forwarded from the caller, for all of the activations' blocks.
    unsafe { group_blocks_pair([first, second], acts, 0, rows, out, stride, Sums::Fresh) }
}

/// [`group_pair`] over a run of blocks, as [`group_blocks`] is [`group`]'s: `tiles` are each
/// group's tiles of activation blocks `first_block..first_block + len`. The AVX-512 kernels
/// of Q5_0 and Q4_0 send prompt rows here, on their tiles widened (`widened::group_pair`).
///
/// # Safety
/// As for [`group_pair`], with the blocks inside `acts.blocks`; with [`Sums::Resumed`], `out`
/// holds both groups' rows' sums over the blocks before `first_block`.
#[cfg(target_arch = "x86_64")]
pub(crate) unsafe fn group_blocks_pair<T: Borrow<Tile>>(
    tiles: [&[T]; 2],
    acts: &QuantizedRows,
    first_block: usize,
    rows: Range<usize>,
    out: *mut f32,
    stride: usize,
    sums: Sums,
) {
    assert!(tiles[0].len() == tiles[1].len() && first_block + tiles[0].len() <= acts.blocks);
    let runs = tiles.map(|tiles| Run {
        tiles,
        first_block,
        sums,
    });
    // SAFETY: forwarded from the caller; each call covers rows `first..first + R` of `rows`.
    unsafe { in_row_steps!(pair_kernel::<MR>(&runs, acts, out, stride; rows)) }
}

#[cfg(not(target_arch = "x86_64"))]
pub(super) unsafe fn group_pair(
    _: &[Tile],
    _: &QuantizedRows,
    _: Range<usize>,
    _: *mut f32,
    _: usize,
) {
    unreachable!("the packed kernel is only built on x86_64, and `pack` refuses elsewhere")
}

/// Rows `first..first + R` of both groups of a [`group_pair`]: per block and row, one integer
/// sum per group (from the row's offset, over the eight words), then each group's float step
/// as in [`micro_kernel`]. 12 sums, 12 accumulators and the two groups' weight words fit the
/// 32 registers.
///
/// # Safety
/// As for [`group_pair`], for rows `first..first + R`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn pair_kernel<const R: usize>(
    runs: &[Run<'_, impl Borrow<Tile>>; 2],
    acts: &QuantizedRows,
    out: *mut f32,
    stride: usize,
    first: usize,
) {
    use std::arch::x86_64::*;
    let blocks = acts.blocks;
    let (words, scales, offsets, _) = acts.rows(first..first + R);
    // SAFETY: rows `first..first + R` are the caller's, and hold both groups' sums so far
    // where the run resumes them.
    let resumed = unsafe { pair_rows_start::<R>(runs[0].sums, out, first, stride) };
    let mut acc: [[__m512; 2]; R] = std::array::from_fn(|r| [resumed[0][r], resumed[1][r]]);
    for (block, pair) in runs[0].tiles.iter().zip(runs[1].tiles).enumerate() {
        let pair: (&Tile, &Tile) = (pair.0.borrow(), pair.1.borrow());
        let at = |r: usize| r * blocks + runs[0].first_block + block;
        let qs = [pair.0.qs.as_ptr(), pair.1.qs.as_ptr()].map(|p| p.cast::<__m512i>());
        let mut sums: [[__m512i; 2]; R] = std::array::from_fn(|r| {
            let offset = _mm512_set1_epi32(offsets[at(r)]);
            [offset, offset]
        });
        #[expect(
            clippy::needless_range_loop,
            reason = "word q of both tiles and of every row"
        )]
        for q in 0..8 {
            // SAFETY: each tile's `qs` is 512 bytes, eight words (see `micro_kernel`).
            let w = qs.map(|qs| unsafe { _mm512_loadu_si512(qs.add(q)) });
            for (r, sums) in sums.iter_mut().enumerate() {
                let a = _mm512_set1_epi32(words[at(r)][q]);
                sums[0] = _mm512_dpbusd_epi32(sums[0], w[0], a);
                sums[1] = _mm512_dpbusd_epi32(sums[1], w[1], a);
            }
        }
        let weight_scales = [widen16(&pair.0.scales), widen16(&pair.1.scales)];
        for (r, (acc, sums)) in acc.iter_mut().zip(&sums).enumerate() {
            let scale = _mm512_set1_ps(scales[at(r)]);
            for ((acc, sum), weight_scales) in acc.iter_mut().zip(sums).zip(weight_scales) {
                let sum = _mm512_cvtepi32_ps(*sum);
                *acc = _mm512_fmadd_ps(sum, _mm512_mul_ps(weight_scales, scale), *acc);
            }
        }
    }
    let acc: [[__m512; R]; 2] = [0, 1].map(|g| std::array::from_fn(|r| acc[r][g]));
    // SAFETY: rows `first..first + R` are the caller's, 32 columns from `out`.
    unsafe { store_pair_rows(&acc, out, first, stride) }
}

/// # Safety
/// As for [`group_blocks`], for rows `first..first + R`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn micro_kernel<const R: usize>(
    run: &Run<'_, impl Borrow<Tile>>,
    acts: &QuantizedRows,
    out: *mut f32,
    stride: usize,
    first: usize,
) {
    use std::arch::x86_64::*;
    let blocks = acts.blocks;
    let (words, scales, offsets, _) = acts.rows(first..first + R);
    // SAFETY: rows `first..first + R` are the caller's, and hold their sums so far where the
    // run resumes them.
    let mut acc = unsafe { rows_start::<R>(run.sums, out, first, stride) };
    let requests = WeightRequests::here();
    for (block, tile) in run.tiles.iter().enumerate() {
        let tile: &Tile = tile.borrow();
        // See `prefetch::WeightRequests`.
        prefetch_light::<R, _>(requests, tile);
        let qs = tile.qs.as_ptr().cast::<__m512i>();
        let mut w = [_mm512_setzero_si512(); 8];
        for (q, w) in w.iter_mut().enumerate() {
            // SAFETY: `qs` is 512 bytes at the start of the tile; tiles are 32-byte aligned,
            // so the loads are unaligned.
            *w = unsafe { _mm512_loadu_si512(qs.add(q)) };
        }
        let weight_scales = widen16(&tile.scales);
        for (r, acc) in acc.iter_mut().enumerate() {
            let at = r * blocks + run.first_block + block;
            let a = &words[at];
            let mut even = _mm512_set1_epi32(offsets[at]);
            let mut odd = _mm512_setzero_si512();
            for q in (0..8).step_by(2) {
                even = _mm512_dpbusd_epi32(even, w[q], _mm512_set1_epi32(a[q]));
                odd = _mm512_dpbusd_epi32(odd, w[q + 1], _mm512_set1_epi32(a[q + 1]));
            }
            let sum = _mm512_cvtepi32_ps(_mm512_add_epi32(even, odd));
            let scale = _mm512_mul_ps(weight_scales, _mm512_set1_ps(scales[at]));
            *acc = _mm512_fmadd_ps(sum, scale, *acc);
        }
    }
    // SAFETY: rows `first..first + R` are the caller's.
    unsafe { store_rows512(&acc, out, first, stride) }
}

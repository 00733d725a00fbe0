//! Prompt rows on the AVX-512 and AVX-VNNI kernels whose tiles need unpacking: Q5_0 and Q4_0
//! tiles are widened to bytes once per run of blocks and the Q8_0 kernel for the same
//! instruction set multiplies them ([`BlocksKernel`]); on AVX-512, Q5_K's and
//! Q6_K's values are unpacked alone ([`UnpackedTile`]) for their own micro-kernels, which take
//! the scales from the packed tiles ([`Run`]). [`in_runs`] is the loop both ways share.
//!
//! Such a kernel unpacks each tile's values into registers before its `vpdpbusd`s, and its
//! micro-kernel shares that unpacking between the six rows it takes at a time: for a prompt
//! slice of 76 rows, a tile is unpacked thirteen times. Widened into Q8_0 tiles instead (the
//! values offset to `q + 128`, the scales as they are), a run of [`RUN_BLOCKS`] tiles is
//! unpacked once and then stays in L1 while every row of the slice passes over it, and the
//! rows cost what Q8_0's do. The integer sums are exact either way and each row's blocks are
//! added in the same order, so the results are the same bits as the kernel's own (the tests
//! hold prompt rows to decoded ones).
//!
//! Decoding (a single row, or a few) keeps the format's own kernel: it reads each tile once
//! from memory, and widening would add a pass over it.

use std::arch::x86_64::*;
use std::mem::MaybeUninit;
use std::ops::Range;

use crate::activations::{BLOCK, QuantizedRows, SUPER};
use crate::q8_0::{self, Sums};

/// Q5_0 and Q4_0 tiles widened at a time: 18 KiB of Q8_0 tiles on the stack, which L1 keeps
/// beside a slice's activations.
const RUN_BLOCKS: usize = 32;

/// A widened Q8_0 tile for the AVX-512 or the AVX-VNNI kernel, starting on a cache line. Q8_0's
/// packed tiles are 544 bytes, so in an array of them every other one starts 32 bytes past a
/// line, and each of the AVX-512 kernel's 64-byte weight loads from it spans two lines. On a
/// 2-core Intel Xeon VM (Ice Lake), a loop of the pair kernel's shape (two weight loads, six
/// broadcasts, twelve `vpdpbusd`) ran 20% slower with both loads spanning two lines than
/// with neither; widened to line tiles, the prompt rows of Q5_0 and Q4_0 matrices ran 5–12%
/// faster (`examples/packed_matmul 2 compute`, gate/up and down, medians of three rounds in
/// turn).
pub(crate) type ByteTile = q8_0::LineTile;

/// Stores word `q`'s values of a tile narrower than a byte, unpacked by an AVX2 kernel
/// (`low`: columns `4q + t`, `high`: `4q + 16 + t`, each rows 0–7 then 8–15), plus `offset`
/// (128 less the format's own offset), in Q8_0's words `q` and `q + 4` of `into`.
///
/// # Safety
/// The CPU has AVX2.
///
/// # Panics
/// If `q` is not below 4.
#[inline]
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn store_word256(
    into: &mut MaybeUninit<ByteTile>,
    q: usize,
    (low, high): &([__m256i; 2], [__m256i; 2]),
    offset: __m256i,
) {
    assert!(q < 4, "word {q} of a 32-value block");
    // SAFETY: `qs` is a field of the tile being written.
    let to = unsafe { (&raw mut (*into.as_mut_ptr()).0.qs).cast::<__m256i>() };
    for h in 0..2 {
        // SAFETY: Q8_0's words `q` and `q + 4` are 64 bytes each from `q * 64` and
        // `(q + 4) * 64` of its 512 (`q < 4`), rows 0–7 then 8–15 (unaligned stores).
        unsafe {
            _mm256_storeu_si256(to.add(2 * q + h), _mm256_add_epi8(low[h], offset));
            _mm256_storeu_si256(to.add(2 * (q + 4) + h), _mm256_add_epi8(high[h], offset));
        }
    }
}

/// A Q8_0 kernel over a run of blocks: `q8_0::group_blocks` (AVX-512) or
/// `q8_0::vnni_group_blocks` (AVX-VNNI), both on [`ByteTile`]s.
pub(crate) type BlocksKernel =
    unsafe fn(&[ByteTile], &QuantizedRows, usize, Range<usize>, *mut f32, usize, Sums);

/// Writes the 16 columns of one row group for activation rows `rows`, as the format's `group`
/// does, widening its `tiles` (one per activation block) with `widen` a run at a time, each
/// run multiplied by `multiply`.
///
/// # Safety
/// The CPU runs `widen` and `multiply`; `out` is valid for writes of `rows.end` rows ×
/// `stride` f32 from the start of the output; `tiles` holds `acts.blocks` tiles.
pub(crate) unsafe fn group<T>(
    tiles: &[T],
    acts: &QuantizedRows,
    rows: Range<usize>,
    (out, stride): (*mut f32, usize),
    widen: unsafe fn(&T, &mut MaybeUninit<ByteTile>),
    multiply: BlocksKernel,
) {
    debug_assert_eq!(tiles.len(), acts.blocks);
    // SAFETY: forwarded from the caller; each run's tiles are those of its blocks, and the
    // runs before it wrote the rows' sums over the blocks before them.
    unsafe {
        in_runs::<_, _, RUN_BLOCKS, 1>([tiles], widen, |[wide], first, sums| {
            multiply(wide, acts, first, rows.clone(), out, stride, sums)
        })
    }
}

/// Tiles of each group widened at a time by [`group_pair`]: two groups' runs take the L1 that
/// one group's [`RUN_BLOCKS`] take.
const PAIR_RUN_BLOCKS: usize = RUN_BLOCKS / 2;

/// [`group`] for two row groups at once: `tiles` holds the first group's tiles, then the
/// second's, and a run of each is widened, then multiplied by Q8_0's pair kernel, whose
/// activation broadcasts feed both groups (`q8_0::group_blocks_pair`).
///
/// # Safety
/// As for [`group`], with `tiles` holding `2 · acts.blocks` tiles and `out` valid for the two
/// groups' 32 columns.
pub(crate) unsafe fn group_pair<T>(
    tiles: &[T],
    acts: &QuantizedRows,
    rows: Range<usize>,
    out: *mut f32,
    stride: usize,
    widen: unsafe fn(&T, &mut MaybeUninit<ByteTile>),
) {
    assert_eq!(tiles.len(), 2 * acts.blocks);
    let (first, second) = tiles.split_at(acts.blocks);
    // SAFETY: forwarded from the caller; the runs before each wrote both groups' sums over
    // the blocks before it.
    unsafe {
        in_runs::<_, _, PAIR_RUN_BLOCKS, 2>([first, second], widen, |wide, first, sums| {
            q8_0::group_blocks_pair(wide, acts, first, rows.clone(), out, stride, sums)
        })
    }
}

/// Widens each of `N` groups' `tiles` (as many for each) with `widen`, up to `RUN` tiles of
/// each at a time, into arrays on the stack, and calls `multiply(wide, first, sums)` for each
/// run: `wide[g]` holds group `g`'s tiles `first..first + RUN` (fewer in the last run), and
/// `sums` is [`Sums::Fresh`] for the first run, [`Sums::Resumed`] for the others.
///
/// The arrays start uninitialized, each run's tiles written by `widen` before they are read:
/// filling them first (17 KiB, once per call, and a call per row group and slice of rows) was
/// 1.5% of a prompt's samples through Qwen2.5-0.5B (2-core Intel Xeon VM, `perf`).
///
/// # Safety
/// `widen` may be called, and writes the whole of its tile.
pub(crate) unsafe fn in_runs<T, W, const RUN: usize, const N: usize>(
    tiles: [&[T]; N],
    widen: unsafe fn(&T, &mut MaybeUninit<W>),
    mut multiply: impl FnMut([&[W]; N], usize, Sums),
) {
    let len = tiles.first().map_or(0, |tiles| tiles.len());
    assert!(tiles.iter().all(|tiles| tiles.len() == len));
    let mut wide = [const { [const { MaybeUninit::<W>::uninit() }; RUN] }; N];
    for first in (0..len).step_by(RUN) {
        let run = first..len.min(first + RUN);
        for (tiles, wide) in tiles.iter().zip(&mut wide) {
            for (tile, wide) in tiles[run.clone()].iter().zip(wide.iter_mut()) {
                // SAFETY: the caller vouches for `widen`.
                unsafe { widen(tile, wide) };
            }
        }
        let sums = if first == 0 {
            Sums::Fresh
        } else {
            Sums::Resumed
        };
        // SAFETY: `widen` wrote the first `run.len()` tiles of every array just above (the
        // caller's), and `MaybeUninit<W>` has `W`'s layout.
        let written = wide.each_ref().map(|wide| unsafe {
            std::slice::from_raw_parts(wide.as_ptr().cast::<W>(), run.len())
        });
        multiply(written, first, sums);
    }
}

/// Sub-blocks per K-quant super-block (of one activation block each).
const SUBS: usize = SUPER / BLOCK;

/// A K-quant tile's sub-block values, the words its micro-kernel multiplies: from the tile as
/// packed (unpacking them) or from an [`UnpackedTile`] (loading them).
pub(crate) trait SubBlockWords {
    /// Sub-block `j`'s values, 16 rows to a 64-byte word: columns `4q + t` of its first half
    /// in word `q` of the first array, `4q + 16 + t` in word `q` of the second.
    ///
    /// # Safety
    /// The CPU has AVX-512 F/BW; `j` is below the sub-blocks of a super-block (8).
    unsafe fn words(&self, j: usize) -> ([__m512i; 4], [__m512i; 4]);
}

/// A K-quant tile's values unpacked to bytes (Q5_K, Q6_K): sub-block `j`'s words as
/// [`SubBlockWords::words`] gives them, the first array's in `0[j][0..4]`, the second's in
/// `0[j][4..8]`. The scales stay in the packed tile.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub(crate) struct UnpackedTile([[[u8; 64]; 8]; SUBS]);

impl UnpackedTile {
    /// Word `w` of sub-block `j`: word `w` of [`SubBlockWords::words`]' first array for
    /// `w < 4`, word `w − 4` of its second for the others.
    ///
    /// # Safety
    /// The CPU has AVX-512 F; `j` is below 8 and `w` below 8.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(crate) unsafe fn word(&self, j: usize, w: usize) -> __m512i {
        // SAFETY: `0[j][w]` is 64 bytes, 64-byte aligned.
        unsafe { _mm512_load_si512(self.0[j][w].as_ptr().cast()) }
    }
}

impl SubBlockWords for UnpackedTile {
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn words(&self, j: usize) -> ([__m512i; 4], [__m512i; 4]) {
        // SAFETY: `j < SUBS` (the caller's) and `w < 8`; the CPU has AVX-512 F.
        let word = |w: usize| unsafe { self.word(j, w) };
        (
            std::array::from_fn(word),
            std::array::from_fn(|q| word(q + 4)),
        )
    }
}

/// `tile`'s values unpacked into `into`.
///
/// # Safety
/// The CPU has AVX-512 F/BW.
#[target_feature(enable = "avx512f,avx512bw")]
pub(crate) unsafe fn unpack<T: SubBlockWords>(tile: &T, into: &mut MaybeUninit<UnpackedTile>) {
    let into = into.as_mut_ptr();
    for j in 0..SUBS {
        // SAFETY: `j < SUBS`; the CPU has AVX-512 F/BW (this function's contract).
        let (first, second) = unsafe { tile.words(j) };
        for (w, word) in first.iter().chain(&second).enumerate() {
            // SAFETY: word `w` of sub-block `j` is 64 bytes inside `into`, 64-byte aligned.
            unsafe { _mm512_store_si512((&raw mut (*into).0[j][w]).cast(), *word) };
        }
    }
}

/// The super-blocks `first..first + tiles.len()` of a row group, whose values a micro-kernel
/// takes from `words` (the tiles themselves, or them unpacked) and the rest from `tiles`, and
/// how it starts its rows' sums on them (see `q8_0::group_blocks`): what the Q5_K and Q6_K
/// micro-kernels take.
pub(crate) struct Run<'t, S, T> {
    pub words: &'t [S],
    pub tiles: &'t [T],
    pub first: usize,
    pub sums: Sums,
}

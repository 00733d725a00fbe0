//! The Q5_K kernel on AVX-512 VNNI: per sub-block, the 5-bit values (nibbles with their fifth
//! bits moved to bit 4, as in `q5_0::avx512`) times one activation block in `vpdpbusd`, whose
//! i32 sums are exact, then as for Q4_K: the sub-blocks' sums times their scales, and the
//! mins times the activations' block sums, added in i32 over the super-block, and scaled once
//! by `d · a_scale` and `dmin · a_scale` (see `avx512_frame::SuperSums`).
//!
//! Prompt rows take the tiles unpacked first, four at a time, into [`WideTile`]s that hold
//! each sub-block's eight words of 5-bit values as the `vpdpbusd`s read them (see `widened`):
//! the micro-kernel merged the fifth bits of every sub-block once per six rows.

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
use crate::widened::Run;

/// Activation rows per micro-kernel call: 8 unpacked weight registers, the sub-block's scales
/// and mins, and per row an accumulator and the super-block's two sums fit the 32 zmm
/// registers.
const MR: usize = 6;

/// Tiles a prompt call unpacks at a time: 17 KiB of [`WideTile`]s on the stack.
const RUN_TILES: usize = 4;

const _: () = assert!(TILE_ROWS == 16);

avx512_group!(Tile, unpacked into WideTile by widen from EMPTY_WIDE, RUN_TILES);

/// A tile with its sub-blocks' 5-bit values unpacked to bytes: `words[j]` holds sub-block
/// `j`'s words as [`SubBlocks::words`] gives them (the low nibbles' values, then the high
/// ones'); the scales, mins, `d` and `dmin` as the tile has them.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct WideTile {
    words: [[[u8; 64]; 8]; SUBS],
    scales: [[u8; TILE_ROWS]; SUBS],
    mins: [[u8; TILE_ROWS]; SUBS],
    d: [half::f16; TILE_ROWS],
    dmin: [half::f16; TILE_ROWS],
}

const EMPTY_WIDE: WideTile = WideTile {
    words: [[[0; 64]; 8]; SUBS],
    scales: [[0; TILE_ROWS]; SUBS],
    mins: [[0; TILE_ROWS]; SUBS],
    d: [half::f16::ZERO; TILE_ROWS],
    dmin: [half::f16::ZERO; TILE_ROWS],
};

/// What the micro-kernel reads of a tile, packed or unpacked.
#[cfg(target_arch = "x86_64")]
trait SubBlocks {
    /// Sub-block `j`'s 5-bit values (0..=31), 16 rows to a 64-byte word: columns `4q + t` in
    /// word `q` of the first array, `4q + 16 + t` in word `q` of the second.
    ///
    /// # Safety
    /// The CPU has AVX-512 F/BW; `j < SUBS`.
    unsafe fn words(
        &self,
        j: usize,
    ) -> (
        [std::arch::x86_64::__m512i; 4],
        [std::arch::x86_64::__m512i; 4],
    );
    fn scales(&self, j: usize) -> &[u8; TILE_ROWS];
    fn mins(&self) -> &[[u8; TILE_ROWS]; SUBS];
    fn d(&self) -> [&[half::f16; TILE_ROWS]; 2];
}

#[cfg(target_arch = "x86_64")]
impl SubBlocks for Tile {
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn words(
        &self,
        j: usize,
    ) -> (
        [std::arch::x86_64::__m512i; 4],
        [std::arch::x86_64::__m512i; 4],
    ) {
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

    fn scales(&self, j: usize) -> &[u8; TILE_ROWS] {
        &self.scales[j]
    }

    fn mins(&self) -> &[[u8; TILE_ROWS]; SUBS] {
        &self.mins
    }

    fn d(&self) -> [&[half::f16; TILE_ROWS]; 2] {
        [&self.d, &self.dmin]
    }
}

#[cfg(target_arch = "x86_64")]
impl SubBlocks for WideTile {
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn words(
        &self,
        j: usize,
    ) -> (
        [std::arch::x86_64::__m512i; 4],
        [std::arch::x86_64::__m512i; 4],
    ) {
        use std::arch::x86_64::*;
        // SAFETY: `words[j]` is eight 64-byte words, 64-byte aligned.
        let word = |w: usize| unsafe { _mm512_load_si512(self.words[j][w].as_ptr().cast()) };
        (
            std::array::from_fn(word),
            std::array::from_fn(|q| word(q + 4)),
        )
    }

    fn scales(&self, j: usize) -> &[u8; TILE_ROWS] {
        &self.scales[j]
    }

    fn mins(&self) -> &[[u8; TILE_ROWS]; SUBS] {
        &self.mins
    }

    fn d(&self) -> [&[half::f16; TILE_ROWS]; 2] {
        [&self.d, &self.dmin]
    }
}

/// `tile` unpacked into `into`.
///
/// # Safety
/// The CPU has AVX-512 F/BW.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn widen(tile: &Tile, into: &mut WideTile) {
    use std::arch::x86_64::*;
    for j in 0..SUBS {
        // SAFETY: `j < SUBS`; the CPU has AVX-512 F/BW (this function's contract).
        let (low, high) = unsafe { tile.words(j) };
        for (w, word) in low.iter().chain(&high).enumerate() {
            // SAFETY: `words[j][w]` is 64 bytes, 64-byte aligned.
            unsafe { _mm512_store_si512(into.words[j][w].as_mut_ptr().cast(), *word) };
        }
    }
    into.scales = tile.scales;
    into.mins = tile.mins;
    into.d = tile.d;
    into.dmin = tile.dmin;
}

/// # Safety
/// As for [`group`], for rows `first..first + R` and the run's super-blocks; with
/// [`Sums::Resumed`], `out` holds the rows' sums over the super-blocks before the run's.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn micro_kernel<const R: usize>(
    run: &Run<'_, impl SubBlocks>,
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
    for (s, tile) in run.tiles.iter().enumerate() {
        let s = run.first + s;
        let mut sums = [SuperSums::new(); R];
        for j in 0..SUBS {
            prefetch_part::<R, SUBS, _>(requests, tile, j);
            let block = s * SUBS + j;
            // SAFETY: `j < SUBS`; the CPU has AVX-512 F/BW.
            let (low, high) = unsafe { tile.words(j) };
            let sc = widen_bytes16(tile.scales(j));
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
        let mins = MinPairs::new(tile.mins());
        let [d, dmin] = tile.d().map(|d| widen16(d));
        for (r, acc) in acc.iter_mut().enumerate() {
            let first_block = r * blocks + s * SUBS;
            sums[r].add_mins(&mins, &offsets[first_block..first_block + SUBS]);
            *acc = sums[r].into_acc(*acc, d, dmin, scales[first_block]);
        }
    }
    // SAFETY: rows `first..first + R` are the caller's.
    unsafe { store_rows512(&acc, out, first, stride) }
}

//! The Q5_K kernel on AVX-512 VNNI: per sub-block, the 5-bit values (nibbles with their fifth
//! bits moved to bit 4, as in `q5_0::avx512`) times one activation block in `vpdpbusd`, whose
//! i32 sums are exact, then the kernels Q5_K shares with Q4_K (`scale_min512`): the
//! sub-blocks' sums times their scales, and the mins times the activations' block sums, added
//! in i32 over the super-block, and scaled once by `d · a_scale` and `dmin · a_scale`.
//!
//! Prompt rows take the tiles unpacked first, four at a time, each sub-block's eight words of
//! 5-bit values as the `vpdpbusd`s read them (`widened::UnpackedTile`): the micro-kernel
//! merged the fifth bits of every sub-block once per six rows. They take two row groups at a
//! time where a slice has the rows for it (`tiled::matmul`).

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::__m512i;

use super::{TILE_ROWS, Tile};
use crate::avx512_frame::avx512_group;
#[cfg(target_arch = "x86_64")]
use crate::fifth_bits::FifthBits512;
#[cfg(target_arch = "x86_64")]
use crate::scale_min512::{micro_kernel, pair_kernel, scale_min_tile};
#[cfg(target_arch = "x86_64")]
use crate::widened::SubBlockWords;

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

#[cfg(target_arch = "x86_64")]
scale_min_tile!(Tile, high_in_place: false);

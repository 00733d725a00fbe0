//! The Q4_K kernel on AVX-512 VNNI: per sub-block, the nibbles times one activation block in
//! `vpdpbusd` as for Q4_0 (see `q4_0::avx512`), the high nibbles kept in place (sixteen times
//! their value), then the kernels Q4_K shares with Q5_K (`scale_min512`): the sub-blocks' sums
//! times their scales, and the mins times the activations' block sums, added in i32 over the
//! super-block, exactly, and scaled once.
//!
//! Prompt rows take the tiles unpacked first, four at a time (`widened::UnpackedTile`), and
//! two row groups at a time where a slice has the rows for it (`tiled::matmul`).

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::__m512i;

use super::{TILE_ROWS, Tile};
use crate::avx512_frame::avx512_group;
#[cfg(target_arch = "x86_64")]
use crate::scale_min512::{micro_kernel, pair_kernel, scale_min_tile};
#[cfg(target_arch = "x86_64")]
use crate::widened::SubBlockWords;

/// Activation rows per micro-kernel call: 8 weight registers, the sub-block's scales, and per
/// row an accumulator and the super-block's sums beside the two half sums, fit the 32 zmm
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
    /// The low nibbles, and the high ones in place: sixteen times their value, so that each
    /// half's sum is a multiple of 16 that fits i16 once divided (`ScaleMinTile::HIGH_IN_PLACE`).
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn words(&self, j: usize) -> ([__m512i; 4], [__m512i; 4]) {
        use std::arch::x86_64::*;
        let qs = self.qs[j].as_ptr().cast::<__m512i>();
        // SAFETY: `qs[j]` is 256 bytes at a 64-byte aligned offset of the tile; word `q` is
        // its 64 bytes from `q * 64`.
        let raw: [__m512i; 4] = std::array::from_fn(|q| unsafe { _mm512_load_si512(qs.add(q)) });
        let (low, high) = (_mm512_set1_epi8(0x0f), _mm512_set1_epi8(0xf0u8 as i8));
        (
            raw.map(|raw| _mm512_and_si512(raw, low)),
            raw.map(|raw| _mm512_and_si512(raw, high)),
        )
    }
}

#[cfg(target_arch = "x86_64")]
scale_min_tile!(Tile, high_in_place: true);

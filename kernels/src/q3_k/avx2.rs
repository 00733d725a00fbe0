//! The Q3_K kernel on AVX2 (see the module above for the arithmetic).

use super::{SUBS, TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx2_frame::avx2_group;
#[cfg(target_arch = "x86_64")]
use crate::avx2_frame::{
    SubBlockActs, add_scaled, offset_dot, signed_half_scales, store_rows, tile_sums, widen_halves,
};
use crate::prefetch::WeightRequests;

/// Activation rows per micro-kernel call. A prompt's rows take the tile's two halves of 8 rows
/// one after the other, over the whole super-block each (`avx2_frame::tile_sums`), so each row
/// keeps two i16 sums (one per scale) and one i32 super-block sum beside the unpacked values.
/// Eight rows ran prompts 25–30% slower (Zen 2, `packed_matmul`, in turn).
const MR: usize = 4;

const _: () = assert!(TILE_ROWS == 16);

avx2_group!(Tile, SUBS);

/// # Safety
/// As for [`group`], for rows `first..first + R`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn rows<const R: usize>(
    tiles: &[Tile],
    acts: &QuantizedRows,
    out: *mut f32,
    stride: usize,
    first: usize,
) {
    use std::arch::x86_64::*;
    let blocks = acts.blocks;
    let (words, scales, _, pair_sums) = acts.rows(first..first + R);
    let mut acc = [[_mm256_setzero_ps(); 2]; R];
    let requests = WeightRequests::here();
    for (s, tile) in tiles.iter().enumerate() {
        // Per half and row: the halves' sums times their scales in i32, exact, as the
        // super-block's activations share one scale (ggml's Q8_K).
        let dots = tile_sums::<R, false, _, _>(
            requests,
            tile,
            [_mm256_setzero_si256(); R],
            |j, h, dots| {
                // SAFETY: the CPU has AVX2 (this function's contract); `words` and `pair_sums`
                // hold `R` rows of `blocks` entries.
                unsafe { sub_block(tile, j, h, s * SUBS + j, (words, pair_sums, blocks), dots) }
            },
            None::<fn(usize, &mut [[__m256i; R]; 2])>,
        );
        let d = widen_halves(&tile.d);
        for (r, acc) in acc.iter_mut().enumerate() {
            add_scaled(
                acc,
                [dots[0][r], dots[1][r]],
                d,
                scales[r * blocks + s * SUBS],
            );
        }
    }
    // SAFETY: rows `first..first + R` are the caller's.
    unsafe { store_rows(&acc, out, first, stride) }
}

/// Adds sub-block `j` of `tile`, for the tile's rows `8h..8h + 8`, to `dots`: each row's
/// half-block sums less 4 times the activations' pair sums, times their scales. `block` is
/// the sub-block's activation block.
///
/// # Safety
/// The CPU has AVX2; `words` and `pair_sums` hold `R` rows of `blocks` entries.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn sub_block<const R: usize>(
    tile: &Tile,
    j: usize,
    h: usize,
    block: usize,
    (words, pair_sums, blocks): SubBlockActs,
    dots: &mut [std::arch::x86_64::__m256i; R],
) {
    use std::arch::x86_64::*;
    let values = word_values(tile, j, h);
    // `[row][values 0..16 or 16..32]`, i16 sums.
    let mut sums = [[_mm256_setzero_si256(); 2]; R];
    for (k, q) in values.iter().enumerate() {
        for (r, sums) in sums.iter_mut().enumerate() {
            let a = _mm256_set1_epi32(words[r * blocks + block][k]);
            sums[k / 4] = _mm256_add_epi16(sums[k / 4], _mm256_maddubs_epi16(*q, a));
        }
    }
    let dup = signed_half_scales(&tile.scales[j], h);
    for (r, dots) in dots.iter_mut().enumerate() {
        // Less 4 · the pair sums (each at most 1016 in magnitude).
        let dot = offset_dot::<2>(sums[r], &pair_sums[r * blocks + block], dup);
        *dots = _mm256_add_epi32(*dots, dot);
    }
}

/// The values of sub-block `j` of `tile` for its rows `8h..8h + 8` that meet each of the
/// activation block's eight words, byte for byte, from the three registers of the tile's
/// `Layout::Packed` (16-bit shifts, whose carries across bytes the masks drop).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
fn word_values(tile: &Tile, j: usize, h: usize) -> [std::arch::x86_64::__m256i; 8] {
    use std::arch::x86_64::*;
    let (low, high) = (
        tile.low[j].as_ptr().cast::<__m256i>(),
        tile.high[j].as_ptr().cast::<__m256i>(),
    );
    // SAFETY: `low[j]` is 128 bytes (`A` for rows 0–7 and 8–15, then `B`) and `high[j]` 64
    // (`C`), at 32-byte aligned offsets of the tile.
    let (a, b, c) = unsafe {
        (
            _mm256_load_si256(low.add(h)),
            _mm256_load_si256(low.add(2 + h)),
            _mm256_load_si256(high.add(h)),
        )
    };
    let (seven, three, four) = (
        _mm256_set1_epi8(7),
        _mm256_set1_epi8(3),
        _mm256_set1_epi8(4),
    );
    let second = |x: __m256i| _mm256_and_si256(_mm256_srli_epi16(x, 3), seven);
    // The low two bits from bits 6–7 of `x`, the top one from bit `top` of `c`.
    let split = |x: __m256i, top: i32| {
        let top = match top {
            6 => _mm256_srli_epi16(c, 4),
            _ => _mm256_srli_epi16(c, 5),
        };
        _mm256_or_si256(
            _mm256_and_si256(_mm256_srli_epi16(x, 6), three),
            _mm256_and_si256(top, four),
        )
    };
    [
        _mm256_and_si256(a, seven),
        second(a),
        _mm256_and_si256(b, seven),
        second(b),
        _mm256_and_si256(c, seven),
        second(c),
        split(a, 6),
        split(b, 7),
    ]
}

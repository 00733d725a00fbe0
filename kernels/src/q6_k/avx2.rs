//! The Q6_K kernel on AVX2 (see the module above for the arithmetic).

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
/// keeps two i16 sums (one per scale) and one i32 super-block sum next to two unpacked weight
/// registers.
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
        let dots = tile_sums::<R, true, _, _>(
            requests,
            tile,
            [_mm256_setzero_si256(); R],
            |j, h, dots| {
                // SAFETY: the CPU has AVX2 (this function's contract); `words` and `pair_sums`
                // hold `R` rows of `blocks` entries.
                unsafe { sub_block(tile, j, h, s * SUBS + j, (words, pair_sums, blocks), dots) }
            },
            Some(|j, dots: &mut [[__m256i; R]; 2]| {
                let block = s * SUBS + j;
                // SAFETY: the CPU has AVX2 (this function's contract).
                let sub = unsafe { whole_sub_block(tile, j, &words[block], &pair_sums[block]) };
                for (dots, sub) in dots.iter_mut().zip(sub) {
                    dots[0] = _mm256_add_epi32(dots[0], sub);
                }
            }),
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
/// half-block sums less 32 times the activations' pair sums, times their scales. `block` is
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
    // `[row][values 0..16 or 16..32]`, wrapping i16 sums.
    let mut sums = [[_mm256_setzero_si256(); 2]; R];
    for q in 0..4 {
        // SAFETY: forwarded; `q < 4` and `h < 2`.
        let (low, upper) = unsafe { word_values(tile, j, q, h) };
        for (r, sums) in sums.iter_mut().enumerate() {
            let row = &words[r * blocks + block];
            let (a_low, a_high) = (_mm256_set1_epi32(row[q]), _mm256_set1_epi32(row[q + 4]));
            sums[0] = _mm256_add_epi16(sums[0], _mm256_maddubs_epi16(low, a_low));
            sums[1] = _mm256_add_epi16(sums[1], _mm256_maddubs_epi16(upper, a_high));
        }
    }
    let dup = signed_half_scales(&tile.scales[j], h);
    for (r, dots) in dots.iter_mut().enumerate() {
        // Less 32 · the pair sums (each at most 1016 in magnitude).
        let dot = offset_dot::<5>(sums[r], &pair_sums[r * blocks + block], dup);
        *dots = _mm256_add_epi32(*dots, dot);
    }
}

/// Sub-block `j` of `tile` for one activation row (decode): the sums of both halves, as
/// [`sub_block`] adds them for each. A decoded token takes each word's two halves together,
/// loading its `qh` and broadcasting its activations once for both.
///
/// # Safety
/// The CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn whole_sub_block(
    tile: &Tile,
    j: usize,
    row: &[i32; 8],
    pair_sums: &[i32; 2],
) -> [std::arch::x86_64::__m256i; 2] {
    use std::arch::x86_64::*;
    // `[half][values 0..16 or 16..32]`, wrapping i16 sums.
    let mut sums = [[_mm256_setzero_si256(); 2]; 2];
    for q in 0..4 {
        let (a_low, a_high) = (_mm256_set1_epi32(row[q]), _mm256_set1_epi32(row[q + 4]));
        for (h, sums) in sums.iter_mut().enumerate() {
            // SAFETY: forwarded; `q < 4` and `h < 2`.
            let (low, upper) = unsafe { word_values(tile, j, q, h) };
            sums[0] = _mm256_add_epi16(sums[0], _mm256_maddubs_epi16(low, a_low));
            sums[1] = _mm256_add_epi16(sums[1], _mm256_maddubs_epi16(upper, a_high));
        }
    }
    // Less 32 · the pair sums (each at most 1016 in magnitude).
    std::array::from_fn(|h| {
        offset_dot::<5>(sums[h], pair_sums, signed_half_scales(&tile.scales[j], h))
    })
}

/// Word `q` of sub-block `j`'s half `h` (rows `8h..8h + 8`) as unsigned bytes: the values that
/// meet activation word `q`, then those that meet word `q + 4`.
///
/// # Safety
/// The CPU has AVX2; `j < SUBS`, `q < 4`, `h < 2`.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn word_values(
    tile: &Tile,
    j: usize,
    q: usize,
    h: usize,
) -> (std::arch::x86_64::__m256i, std::arch::x86_64::__m256i) {
    use std::arch::x86_64::*;
    let (six, two, top_bits) = (
        _mm256_set1_epi8(0x3f),
        _mm256_set1_epi8(0x03),
        _mm256_set1_epi8(0x3c),
    );
    // SAFETY: `ql[j]` is 256 bytes and `qh[j]` 128 at 32-byte aligned offsets of the tile; word
    // `q` is 64 bytes of `ql` from `q * 64` (rows 0–7, then 8–15) and 32 of `qh` from `q * 32`.
    let (raw, high) = unsafe {
        (
            _mm256_load_si256(tile.ql[j].as_ptr().cast::<__m256i>().add(2 * q + h)),
            _mm256_load_si256(tile.qh[j].as_ptr().cast::<__m256i>().add(q)),
        )
    };
    // The tile's `Layout::WholeLow`: the low value is bits 0–5 of `ql`; the high one's two
    // lowest bits are its bits 6–7, and its top four the half's nibble of `qh`, shifted to bits
    // 2–5 (16-bit shifts, whose carries across bytes the masks drop).
    let tops = if h == 0 {
        _mm256_slli_epi16(high, 2)
    } else {
        _mm256_srli_epi16(high, 2)
    };
    let low = _mm256_and_si256(raw, six);
    let upper = _mm256_or_si256(
        _mm256_and_si256(_mm256_srli_epi16(raw, 6), two),
        _mm256_and_si256(tops, top_bits),
    );
    (low, upper)
}

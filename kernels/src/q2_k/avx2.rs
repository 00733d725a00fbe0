//! The Q2_K kernel on AVX2 (see the module above for the arithmetic).

use super::{SUBS, TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx2_frame::avx2_group;
#[cfg(target_arch = "x86_64")]
use crate::avx2_frame::{SubBlockActs, row_bytes_twice, store_rows, tile_sums, widen_halves};
use crate::prefetch::WeightRequests;
#[cfg(target_arch = "x86_64")]
use crate::two_bits::values256;

/// Activation rows per micro-kernel call. A prompt's rows take the tile's two halves of 8 rows
/// one after the other, over the whole super-block each (`avx2_frame::tile_sums`), so each row
/// keeps two i16 sums (one per scale) and two i32 super-block sums, next to the plane word and
/// the values unpacked from it.
const MR: usize = 4;

const _: () = assert!(TILE_ROWS == 16);

avx2_group!(Tile, SUBS);

/// Per row, `Σ sc · (q · a)` and `Σ m · Σa` over a super-block for one half of the tile's rows:
/// exact in i32, as the super-block's activations share one scale (ggml's Q8_K).
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct HalfSums<const R: usize> {
    dots: [std::arch::x86_64::__m256i; R],
    mins: [std::arch::x86_64::__m256i; R],
}

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
        let zero = [_mm256_setzero_si256(); R];
        let zero = HalfSums {
            dots: zero,
            mins: zero,
        };
        let sums = tile_sums::<R, false, _, _>(
            requests,
            tile,
            zero,
            |j, h, sums| {
                // SAFETY: the CPU has AVX2 (this function's contract); `words` and `pair_sums`
                // hold `R` rows of `blocks` entries.
                unsafe { sub_block(tile, j, h, s * SUBS + j, (words, pair_sums, blocks), sums) }
            },
            Some(|j, sums: &mut _| {
                let block = s * SUBS + j;
                // SAFETY: the CPU has AVX2 (this function's contract).
                unsafe { whole_sub_block(tile, j, &words[block], pair_sums[block], sums) }
            }),
        );
        let (d, dmin) = (widen_halves(&tile.d), widen_halves(&tile.dmin));
        for (r, acc) in acc.iter_mut().enumerate() {
            let a_scale = _mm256_set1_ps(scales[r * blocks + s * SUBS]);
            for (h, sums) in sums.iter().enumerate() {
                let (dot_scale, min_scale) = (
                    _mm256_mul_ps(d[h], a_scale),
                    _mm256_mul_ps(dmin[h], a_scale),
                );
                acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums.dots[r]), dot_scale, acc[h]);
                acc[h] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(sums.mins[r]), min_scale, acc[h]);
            }
        }
    }
    // SAFETY: rows `first..first + R` are the caller's.
    unsafe { store_rows(&acc, out, first, stride) }
}

/// Adds sub-block `j` of `tile`, for the tile's rows `8h..8h + 8`, to `sums`; `block` is the
/// sub-block's activation block.
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
    sums: &mut HalfSums<R>,
) {
    use std::arch::x86_64::*;
    let low = tile.low[j].as_ptr().cast::<__m256i>();
    // `[row][values 0..16 or 16..32]`, i16 sums.
    let mut halves = [[_mm256_setzero_si256(); 2]; R];
    for w in 0..2 {
        // SAFETY: `low[j]` is 128 bytes at a 64-byte aligned offset of the tile; word `w` is
        // its 64 bytes from `w * 64` (rows 0–7, then 8–15).
        let raw = unsafe { _mm256_load_si256(low.add(2 * w + h)) };
        for k in 0..4 {
            let q = values256(raw, k);
            for (r, halves) in halves.iter_mut().enumerate() {
                let a = _mm256_set1_epi32(words[r * blocks + block][w + 2 * k]);
                halves[k / 2] = _mm256_add_epi16(halves[k / 2], _mm256_maddubs_epi16(q, a));
            }
        }
    }
    let (sc, m) = half_scales(tile, j, h);
    for (r, halves) in halves.iter().enumerate() {
        let pairs = pair_sums[r * blocks + block];
        for half in 0..2 {
            let dot = _mm256_madd_epi16(halves[half], sc[half]);
            sums.dots[r] = _mm256_add_epi32(sums.dots[r], dot);
            // `m · Σa` over the half, from the activations' pair sums.
            let min_dot = _mm256_madd_epi16(_mm256_set1_epi32(pairs[half]), m[half]);
            sums.mins[r] = _mm256_add_epi32(sums.mins[r], min_dot);
        }
    }
}

/// Adds sub-block `j` of `tile` to both halves' `sums` of row 0 for one activation row
/// (decode, `R` = 1), whose block's words are `row`: as [`sub_block`] does for each half, but
/// a word's activations are broadcast once for both.
///
/// # Safety
/// The CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn whole_sub_block<const R: usize>(
    tile: &Tile,
    j: usize,
    row: &[i32; 8],
    pairs: [i32; 2],
    sums: &mut [HalfSums<R>; 2],
) {
    use std::arch::x86_64::*;
    let low = tile.low[j].as_ptr().cast::<__m256i>();
    // `[half of the rows][values 0..16 or 16..32]`, i16 sums.
    let mut halves = [[_mm256_setzero_si256(); 2]; 2];
    for w in 0..2 {
        let a: [__m256i; 4] = std::array::from_fn(|k| _mm256_set1_epi32(row[w + 2 * k]));
        for (h, halves) in halves.iter_mut().enumerate() {
            // SAFETY: as in `sub_block`.
            let raw = unsafe { _mm256_load_si256(low.add(2 * w + h)) };
            for (k, a) in a.iter().enumerate() {
                let q = values256(raw, k);
                halves[k / 2] = _mm256_add_epi16(halves[k / 2], _mm256_maddubs_epi16(q, *a));
            }
        }
    }
    let pairs = pairs.map(|pair| _mm256_set1_epi32(pair));
    for (h, (halves, sums)) in halves.iter().zip(sums).enumerate() {
        let (sc, m) = half_scales(tile, j, h);
        for half in 0..2 {
            let dot = _mm256_madd_epi16(halves[half], sc[half]);
            sums.dots[0] = _mm256_add_epi32(sums.dots[0], dot);
            let min_dot = _mm256_madd_epi16(pairs[half], m[half]);
            sums.mins[0] = _mm256_add_epi32(sums.mins[0], min_dot);
        }
    }
}

/// Half `h` of sub-block `j`'s scales and mins (rows `8h..8h + 8`), for each 16-value half of
/// the sub-block: each row's `sc` (or `m`, both below 16) in both i16 halves of its lane, for
/// `vpmaddwd`.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
fn half_scales(
    tile: &Tile,
    j: usize,
    h: usize,
) -> (
    [std::arch::x86_64::__m256i; 2],
    [std::arch::x86_64::__m256i; 2],
) {
    use std::arch::x86_64::*;
    let bytes = tile.scales[j].map(|part| row_bytes_twice(&part, h));
    (
        bytes.map(|b| _mm256_and_si256(b, _mm256_set1_epi16(0x0f))),
        bytes.map(|b| _mm256_srli_epi16(b, 4)),
    )
}

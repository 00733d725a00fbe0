//! The Q4_1 kernel on AVX2 with F16C (see the module above for the arithmetic).

use std::ops::Range;

use super::{TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::tiled::prefetch_ahead;

/// Activation rows per micro-kernel call, as for Q4_0: their i16 sums for both halves, the
/// four unpacked weight registers and the two broadcast words about fill the sixteen
/// registers.
const MR: usize = 3;

const _: () = assert!(TILE_ROWS == 16);

/// Writes the 16 columns of one row group for activation rows `rows`.
///
/// # Safety
/// The CPU has AVX2, FMA and F16C; `out` is valid for writes of `rows.end` rows × `stride`
/// f32 from the start of the output; `tiles` holds `acts.blocks` tiles.
#[cfg(target_arch = "x86_64")]
pub(super) unsafe fn group(
    tiles: &[Tile],
    acts: &QuantizedRows,
    rows: Range<usize>,
    out: *mut f32,
    stride: usize,
) {
    debug_assert_eq!(tiles.len(), acts.blocks);
    let mut first = rows.start;
    // SAFETY (both calls): forwarded from the caller; each call covers rows `first..first + R`.
    while first + MR <= rows.end {
        unsafe { self::rows::<MR>(tiles, acts, first, out, stride) };
        first += MR;
    }
    while first < rows.end {
        unsafe { self::rows::<1>(tiles, acts, first, out, stride) };
        first += 1;
    }
}

#[cfg(not(target_arch = "x86_64"))]
pub(super) unsafe fn group(_: &[Tile], _: &QuantizedRows, _: Range<usize>, _: *mut f32, _: usize) {
    unreachable!("the packed kernel is only built on x86_64, and `pack` refuses elsewhere")
}

/// # Safety
/// As for [`group`], for rows `first..first + R`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn rows<const R: usize>(
    tiles: &[Tile],
    acts: &QuantizedRows,
    first: usize,
    out: *mut f32,
    stride: usize,
) {
    use std::arch::x86_64::*;
    let blocks = acts.blocks;
    let at = first * blocks..(first + R) * blocks;
    let (words, scales, offsets) = (
        &acts.words[at.clone()],
        &acts.scales[at.clone()],
        &acts.offsets[at],
    );
    let nibble = _mm256_set1_epi8(0x0f);
    let ones = _mm256_set1_epi16(1);
    let mut acc = [[_mm256_setzero_ps(); 2]; R];
    for (block, tile) in tiles.iter().enumerate() {
        prefetch_ahead::<R, _>(tile);
        let qs = tile.qs.as_ptr().cast::<__m256i>();
        let mut sums = [[_mm256_setzero_si256(); 2]; R];
        for q in 0..4 {
            // SAFETY: `qs` is 256 bytes at the 64-byte aligned start of the tile; byte group
            // `q` is its 64 bytes from `q * 64`, rows 0–7 then rows 8–15.
            let raw = unsafe {
                [
                    _mm256_load_si256(qs.add(2 * q)),
                    _mm256_load_si256(qs.add(2 * q + 1)),
                ]
            };
            let low = [
                _mm256_and_si256(raw[0], nibble),
                _mm256_and_si256(raw[1], nibble),
            ];
            let high = [
                _mm256_and_si256(_mm256_srli_epi16(raw[0], 4), nibble),
                _mm256_and_si256(_mm256_srli_epi16(raw[1], 4), nibble),
            ];
            for (r, sums) in sums.iter_mut().enumerate() {
                let row = &words[r * blocks + block];
                let (a_low, a_high) = (_mm256_set1_epi32(row[q]), _mm256_set1_epi32(row[q + 4]));
                for h in 0..2 {
                    let products = _mm256_add_epi16(
                        _mm256_maddubs_epi16(low[h], a_low),
                        _mm256_maddubs_epi16(high[h], a_high),
                    );
                    sums[h] = _mm256_add_epi16(sums[h], products);
                }
            }
        }
        // SAFETY: `d` and `m` are 16 f16 each inside the tile; the loads take 8 at a time,
        // unaligned.
        let (d, m) = unsafe {
            let (d, m) = (
                tile.d.as_ptr().cast::<__m128i>(),
                tile.m.as_ptr().cast::<__m128i>(),
            );
            (
                [
                    _mm256_cvtph_ps(_mm_loadu_si128(d)),
                    _mm256_cvtph_ps(_mm_loadu_si128(d.add(1))),
                ],
                [
                    _mm256_cvtph_ps(_mm_loadu_si128(m)),
                    _mm256_cvtph_ps(_mm_loadu_si128(m.add(1))),
                ],
            )
        };
        for (r, acc) in acc.iter_mut().enumerate() {
            let at = r * blocks + block;
            let scale = _mm256_set1_ps(scales[at]);
            // `offsets` holds −128 · Σa.
            let a_sum = _mm256_set1_ps((-(offsets[at] / 128)) as f32 * scales[at]);
            for h in 0..2 {
                let dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(sums[r][h], ones));
                acc[h] = _mm256_fmadd_ps(dot, _mm256_mul_ps(d[h], scale), acc[h]);
                acc[h] = _mm256_fmadd_ps(m[h], a_sum, acc[h]);
            }
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        // SAFETY: row `first + r` is one of the caller's rows; 16 columns from `out`.
        unsafe {
            let row = out.add((first + r) * stride);
            _mm256_storeu_ps(row, acc[0]);
            _mm256_storeu_ps(row.add(8), acc[1]);
        }
    }
}

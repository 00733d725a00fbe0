//! The Q4_0 kernel on AVX2 (see the module above for the arithmetic).

use super::{TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx2_frame::avx2_group;
#[cfg(target_arch = "x86_64")]
use crate::avx2_frame::store_rows;
use crate::tiled::prefetch_ahead;

/// Activation rows per micro-kernel call: their i16 sums for both halves, the four unpacked
/// weight registers and the two broadcast words about fill the sixteen registers. Measured on
/// Zen (2 threads, m = 256): three rows balance the 896- and 4864-wide shapes best.
const MR: usize = 3;

const _: () = assert!(TILE_ROWS == 16);

avx2_group!(Tile, 1);

/// # Safety
/// As for [`group`], for rows `first..first + R`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
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
        // SAFETY: the 16 scales follow the 256 bytes of `qs`, 64-byte aligned.
        let weight_scales = unsafe {
            [
                _mm256_load_ps(tile.scales.as_ptr()),
                _mm256_load_ps(tile.scales.as_ptr().add(8)),
            ]
        };
        for (r, acc) in acc.iter_mut().enumerate() {
            let at = r * blocks + block;
            // `offsets` holds −128 · Σa; the nibbles' −8 needs −8 · Σa, exactly a sixteenth.
            let correction = _mm256_set1_epi32(offsets[at] / 16);
            let scale = _mm256_set1_ps(scales[at]);
            for h in 0..2 {
                let sum = _mm256_add_epi32(_mm256_madd_epi16(sums[r][h], ones), correction);
                let scale = _mm256_mul_ps(weight_scales[h], scale);
                acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), scale, acc[h]);
            }
        }
    }
    // SAFETY: rows `first..first + R` are the caller's.
    unsafe { store_rows(&acc, out, first, stride) }
}

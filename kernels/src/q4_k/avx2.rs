//! The Q4_K kernel on AVX2 (see the module above for the arithmetic).

use super::{SUBS, TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx2_frame::avx2_group;
#[cfg(target_arch = "x86_64")]
use crate::avx2_frame::{add_scaled, nibble_sums, store_rows, widen_bytes8x2, widen_halves};
#[cfg(target_arch = "x86_64")]
use crate::byte_products::Maddubs;
use crate::prefetch::{WeightRequests, prefetch_part_twice};

/// Activation rows per micro-kernel call, as for Q4_0: their i16 sums and f32 accumulators
/// for both halves of the tile, with the unpacked weights, about fill the sixteen registers.
const MR: usize = 3;

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
    let (words, scales, offsets, _) = acts.rows(first..first + R);
    let mut acc = [[_mm256_setzero_ps(); 2]; R];
    let requests = WeightRequests::here();
    for (s, tile) in tiles.iter().enumerate() {
        // Per row and half, in i32, exact, as the super-block's activations share one scale
        // (ggml's Q8_K): Σ_j sc_j · (q · a)_j, and the mins' −Σ_j m_j · Σa_j.
        let mut dots = [[_mm256_setzero_si256(); 2]; R];
        let mut min_dots = [[_mm256_setzero_si256(); 2]; R];
        for j in 0..SUBS {
            prefetch_part_twice::<R, SUBS, _>(requests, tile, j);
            let block = s * SUBS + j;
            // SAFETY: `qs[j]` is sub-block `j`'s 256 bytes of nibbles, 64-byte aligned.
            let sums = unsafe {
                nibble_sums::<R, Maddubs>(tile.qs[j].as_ptr(), words, blocks, block, |_| {})
            };
            let (sc, mins) = (
                widen_bytes8x2(&tile.scales[j]),
                widen_bytes8x2(&tile.mins[j]),
            );
            // The scale in both i16 halves of its row's lane, for `vpmaddwd`.
            let sc = sc.map(|sc| _mm256_or_si256(sc, _mm256_slli_epi32(sc, 16)));
            for r in 0..R {
                let at = r * blocks + block;
                // `offsets` holds −128 · Σa, and |Σa| ≤ 32 · 127 fits the low i16 of a lane,
                // which meets a min (its high i16 0) in `vpmaddwd`. In f32 per sub-block, the
                // mins had cost a single row (decode) 5–9% of its streaming rate (Zen 2).
                let neg_a_sum = _mm256_set1_epi32(offsets[at] >> 7);
                for h in 0..2 {
                    let (dot, min) = (
                        _mm256_madd_epi16(sums[r][h], sc[h]),
                        _mm256_madd_epi16(mins[h], neg_a_sum),
                    );
                    dots[r][h] = _mm256_add_epi32(dots[r][h], dot);
                    min_dots[r][h] = _mm256_add_epi32(min_dots[r][h], min);
                }
            }
        }
        let (d, dmin) = (widen_halves(&tile.d), widen_halves(&tile.dmin));
        for (r, acc) in acc.iter_mut().enumerate() {
            let a_scale = scales[r * blocks + s * SUBS];
            add_scaled(acc, dots[r], d, a_scale);
            add_scaled(acc, min_dots[r], dmin, a_scale);
        }
    }
    // SAFETY: rows `first..first + R` are the caller's.
    unsafe { store_rows(&acc, out, first, stride) }
}

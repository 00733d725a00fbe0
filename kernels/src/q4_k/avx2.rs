//! The Q4_K kernel on AVX2, and on AVX-VNNI (see the module above for the arithmetic).

use super::{SUBS, TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx2_frame::avx2_and_vnni_groups;
#[cfg(target_arch = "x86_64")]
use crate::avx2_frame::{add_scaled, nibble_sums, store_rows, widen_bytes8x2, widen_halves};
#[cfg(target_arch = "x86_64")]
use crate::byte_products::ByteProducts;
use crate::prefetch::{WeightRequests, prefetch_part_twice};

/// Activation rows per micro-kernel call, as for Q4_0: their i16 sums and f32 accumulators
/// for both halves of the tile, with the unpacked weights, about fill the sixteen registers.
const MR: usize = 3;

const _: () = assert!(TILE_ROWS == 16);

// AVX-VNNI four rows a call, word by word (`ByteProducts::UNPACK_FIRST`), as slices of prompt
// rows come in fours: against three, a 7B's down projection ran 24% faster and the 1.5B's
// shapes from 7% slower to 7% faster; two were slower on all (`packed_matmul`, two rounds).
avx2_and_vnni_groups!(Tile, SUBS, avx-vnni rows 4);

/// Rows `first..first + R`, their byte products summed as `P` sums them.
///
/// # Safety
/// As for [`group`], for those rows; runs inlined into an entry point with AVX2, FMA, F16C
/// and what `P` needs.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn rows_with<const R: usize, P: ByteProducts>(
    tiles: &[Tile],
    acts: &QuantizedRows,
    out: *mut f32,
    stride: usize,
    first: usize,
) {
    use std::arch::x86_64::*;
    let blocks = acts.blocks;
    let (words, scales, offsets, _) = acts.rows(first..first + R);
    // SAFETY: the entry point has the features; `qs[j]` is sub-block `j`'s 256 bytes of
    // nibbles, 64-byte aligned; rows `first..first + R` are the caller's.
    unsafe {
        let mut acc = [[_mm256_setzero_ps(); 2]; R];
        let requests = WeightRequests::here();
        for (s, tile) in tiles.iter().enumerate() {
            // Per row and half, in i32, exact, as the super-block's activations share one
            // scale (ggml's Q8_K): Σ_j sc_j · (q · a)_j, and the mins' −Σ_j m_j · Σa_j.
            let mut dots = [[_mm256_setzero_si256(); 2]; R];
            let mut min_dots = [[_mm256_setzero_si256(); 2]; R];
            for j in 0..SUBS {
                prefetch_part_twice::<R, SUBS, _>(requests, tile, j);
                let block = s * SUBS + j;
                let sums = nibble_sums::<R, P>(&tile.qs[j], (words, blocks, block), |_| {});
                let (sc, mins) = (
                    widen_bytes8x2(&tile.scales[j]),
                    widen_bytes8x2(&tile.mins[j]),
                );
                let sc = [P::sub_block_scales(sc[0]), P::sub_block_scales(sc[1])];
                for r in 0..R {
                    let at = r * blocks + block;
                    // `offsets` holds −128 · Σa, and |Σa| ≤ 32 · 127 fits the low i16 of a
                    // lane, which meets a min (its high i16 0) in `vpmaddwd`. In f32 per
                    // sub-block, the mins had cost a single row (decode) 5–9% of its
                    // streaming rate (Zen 2).
                    let neg_a_sum = _mm256_set1_epi32(offsets[at] >> 7);
                    for h in 0..2 {
                        dots[r][h] = P::add_times_scales(dots[r][h], sums[r][h], sc[h]);
                        min_dots[r][h] = P::add_madd(min_dots[r][h], mins[h], neg_a_sum);
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
        store_rows(&acc, out, first, stride)
    }
}

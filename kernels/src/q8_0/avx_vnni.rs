//! The AVX-VNNI kernel, for CPUs with the 256-bit `vpdpbusd` and no AVX-512 (Intel's desktop
//! and laptop parts since Alder Lake). The weights are stored as for the AVX-512 kernel,
//! offset by 128, and each row's block sum starts from the activations' `-128 · Σa`, so a row
//! takes one `vpdpbusd` per word and half of the tile where AVX2 takes four instructions (the
//! sign, two multiplies and an add). The integers are AVX2's, so are the float steps and the
//! bits.

#[cfg(target_arch = "x86_64")]
use std::borrow::Borrow;
use std::ops::Range;

#[cfg(target_arch = "x86_64")]
use super::{Run, Sums};
use super::{TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
#[cfg(target_arch = "x86_64")]
use crate::avx2_frame::{add_scaled, rows_start, store_rows, widen_halves};
use crate::prefetch::{WeightRequests, prefetch_part_twice};

/// Activation rows per micro-kernel call: four rows' sums for both halves, the two weight
/// registers and a broadcast leave the compiler room in the sixteen registers. Six (fifteen
/// registers) and five ran 3–20% slower on the 0.5B's shapes and a 7B's down projection
/// (`packed_matmul`, two rounds each), the compiler copying and spilling sums. The rows of a
/// slice left after whole steps take one call (`in_row_steps`).
const MR: usize = 4;

const _: () = assert!(TILE_ROWS == 16);

// The AVX-VNNI kernels of Q5_0 and Q4_0 send prompt rows to `group_blocks`, on their tiles
// widened (`widened::group`).
super::blocks_frame!("AVX2, FMA, F16C and AVX-VNNI");

/// # Safety
/// As for [`group_blocks`], for rows `first..first + R`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c,avxvnni")]
unsafe fn micro_kernel<const R: usize>(
    run: &Run<'_, impl Borrow<Tile>>,
    acts: &QuantizedRows,
    out: *mut f32,
    stride: usize,
    first: usize,
) {
    use std::arch::x86_64::*;
    let blocks = acts.blocks;
    let (words, scales, offsets, _) = acts.rows(first..first + R);
    // SAFETY: rows `first..first + R` are the caller's, and hold their sums so far where the
    // run resumes them.
    let mut acc = unsafe { rows_start::<R>(run.sums, out, first, stride) };
    let requests = WeightRequests::here();
    for (tile, block) in run.tiles.iter().zip(run.first_block..) {
        let tile = tile.borrow();
        let qs = tile.qs.as_ptr().cast::<__m256i>();
        let mut sums = [[_mm256_setzero_si256(); 2]; R];
        for (r, sums) in sums.iter_mut().enumerate() {
            *sums = [_mm256_set1_epi32(offsets[r * blocks + block]); 2];
        }
        #[expect(
            clippy::needless_range_loop,
            reason = "`q` picks the same word from the tile and from every row's block"
        )]
        for q in 0..8 {
            prefetch_part_twice::<R, 8, _>(requests, tile, q);
            // SAFETY: `qs` is 512 bytes at the 32-byte aligned start of the tile; word `q` is
            // its 64 bytes from `q * 64`, rows 0–7 then rows 8–15.
            let w = unsafe {
                [
                    _mm256_load_si256(qs.add(2 * q)),
                    _mm256_load_si256(qs.add(2 * q + 1)),
                ]
            };
            for (r, sums) in sums.iter_mut().enumerate() {
                let a = _mm256_set1_epi32(words[r * blocks + block][q]);
                for h in 0..2 {
                    sums[h] = _mm256_dpbusd_avx_epi32(sums[h], w[h], a);
                }
            }
        }
        let weight_scales = widen_halves(&tile.scales);
        for (r, acc) in acc.iter_mut().enumerate() {
            add_scaled(acc, sums[r], weight_scales, scales[r * blocks + block]);
        }
    }
    // SAFETY: rows `first..first + R` are the caller's.
    unsafe { store_rows(&acc, out, first, stride) }
}

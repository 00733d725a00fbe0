//! The scalar references: ggml's dequantization of the GGUF bytes (as candle's `to_float`
//! writes it, operation for operation), and what the packed kernel computes, one value at a
//! time from the packed tiles. The tests hold the packing to the first and the SIMD kernel to
//! the second.

use half::f16;

use super::{BLOCK, BLOCK_BYTES, PackedQ2_K, SUBS, SUPER, TILE_ROWS};
use crate::activations::{QuantizedRows, Scheme};
use crate::two_bits;

/// ggml's `dequantize_row_q2_K` over whole super-blocks of GGUF bytes, written from its loops.
pub(super) fn dequantize_gguf(data: &[u8]) -> Vec<f32> {
    let mut out = Vec::with_capacity(data.len() / BLOCK_BYTES * SUPER);
    for x in data.chunks_exact(BLOCK_BYTES) {
        let (scales, qs) = (&x[..16], &x[16..80]);
        let d = f16::from_le_bytes([x[80], x[81]]).to_f32();
        let min = f16::from_le_bytes([x[82], x[83]]).to_f32();
        let mut is = 0;
        for q in qs.chunks_exact(32) {
            for shift in (0..8).step_by(2) {
                for half in 0..2 {
                    let sc = scales[is];
                    is += 1;
                    let (dl, ml) = (d * f32::from(sc & 0x0f), min * f32::from(sc >> 4));
                    for byte in &q[16 * half..16 * half + 16] {
                        out.push(dl * f32::from((byte >> shift) & 3) - ml);
                    }
                }
            }
        }
    }
    out
}

impl PackedQ2_K {
    /// What [`PackedQ2_K::matmul`] computes: per super-block, the halves' sums times their
    /// scales and the activations' sums times the mins, each added in i32, then scaled once.
    pub(super) fn matmul_reference(&self, lhs: &[f32], m: usize, out: &mut [f32]) {
        let acts = QuantizedRows::quantize(lhs, m, self.cols, 1, Scheme::Q8_K);
        let (blocks, supers) = (self.cols / BLOCK, self.cols / SUPER);
        for i in 0..m {
            for row in 0..self.rows {
                let (group, lane) = (row / TILE_ROWS, row % TILE_ROWS);
                let mut acc = 0f32;
                for s in 0..supers {
                    let tile = &self.tiles[group * supers + s];
                    let (mut dot, mut min_dot) = (0i32, 0i32);
                    for j in 0..SUBS {
                        let a = acts.values(i * blocks + s * SUBS + j);
                        for half in 0..2 {
                            let byte = tile.scales[j][half][lane];
                            let values = 16 * half..16 * half + 16;
                            let sum: i32 = values
                                .clone()
                                .map(|v| i32::from(two_bits::get(&tile.low[j], lane, v)) * a[v])
                                .sum();
                            dot += sum * i32::from(byte & 0x0f);
                            min_dot += values.map(|v| a[v]).sum::<i32>() * i32::from(byte >> 4);
                        }
                    }
                    let a_scale = acts.scales[i * blocks + s * SUBS];
                    acc += dot as f32 * (tile.d[lane].to_f32() * a_scale);
                    acc -= min_dot as f32 * (tile.dmin[lane].to_f32() * a_scale);
                }
                out[i * self.rows + row] = acc;
            }
        }
    }
}

//! The scalar references: ggml's dequantization of the GGUF bytes (as candle's `to_float`
//! writes it, operation for operation), and what the packed kernels compute, one value at a
//! time from the packed tiles. The tests hold the packing to the first and the SIMD kernels to
//! the second.

use half::f16;

use super::{BLOCK, BLOCK_BYTES, PackedQ5_K, SUBS, SUPER, TILE_ROWS, scale_min};
use crate::activations::{QuantizedRows, Scheme};

/// ggml's `dequantize_row_q5_K` over whole super-blocks of GGUF bytes.
pub(super) fn dequantize_gguf(data: &[u8]) -> Vec<f32> {
    let mut out = Vec::with_capacity(data.len() / BLOCK_BYTES * SUPER);
    for raw in data.chunks_exact(BLOCK_BYTES) {
        let d = f16::from_le_bytes([raw[0], raw[1]]).to_f32();
        let min = f16::from_le_bytes([raw[2], raw[3]]).to_f32();
        let (packed, qh, qs) = (&raw[4..16], &raw[16..48], &raw[48..]);
        for (chunk, q) in qs.chunks_exact(32).enumerate() {
            let (sc, m) = scale_min(2 * chunk, packed);
            let (d1, m1) = (d * f32::from(sc), min * f32::from(m));
            let (sc, m) = scale_min(2 * chunk + 1, packed);
            let (d2, m2) = (d * f32::from(sc), min * f32::from(m));
            let fifth = |l: usize, bit: usize| if qh[l] >> bit & 1 == 1 { 16.0 } else { 0.0 };
            out.extend(
                q.iter()
                    .enumerate()
                    .map(|(l, q)| d1 * (f32::from(q & 0x0f) + fifth(l, 2 * chunk)) - m1),
            );
            out.extend(
                q.iter()
                    .enumerate()
                    .map(|(l, q)| d2 * (f32::from(q >> 4) + fifth(l, 2 * chunk + 1)) - m2),
            );
        }
    }
    out
}

impl PackedQ5_K {
    /// What [`PackedQ5_K::matmul`] computes: per super-block, the sub-blocks' integer sums
    /// times their scales, and the activations' block sums times their mins, added exactly in
    /// integers, then scaled once by the super-block's shared activation scale.
    pub(super) fn matmul_reference(&self, lhs: &[f32], m: usize, out: &mut [f32]) {
        let acts = QuantizedRows::quantize(lhs, m, self.cols, 1, Scheme::Q8_K);
        let (blocks, supers) = (self.cols / BLOCK, self.cols / SUPER);
        for i in 0..m {
            for row in 0..self.rows {
                let (group, lane) = (row / TILE_ROWS, row % TILE_ROWS);
                let mut acc = 0f32;
                for s in 0..supers {
                    let tile = &self.tiles[group * supers + s];
                    let (mut dots, mut mins) = (0i64, 0i64);
                    for j in 0..SUBS {
                        let a = acts.values(i * blocks + s * SUBS + j);
                        let mut dot = 0i64;
                        for (v, a) in a.iter().enumerate() {
                            dot += i64::from(i32::from(self.value(tile, j, lane, v)) * a);
                        }
                        dots += dot * i64::from(tile.scales[j][lane]);
                        mins += i64::from(tile.mins[j][lane]) * i64::from(a.iter().sum::<i32>());
                    }
                    let a_scale = acts.scales[i * blocks + s * SUBS];
                    acc += dots as f32 * (tile.d[lane].to_f32() * a_scale);
                    acc -= mins as f32 * (tile.dmin[lane].to_f32() * a_scale);
                }
                out[i * self.rows + row] = acc;
            }
        }
    }
}

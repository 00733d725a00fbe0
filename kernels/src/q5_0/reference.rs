//! The scalar references: ggml's dequantization of the GGUF bytes (as candle's `to_float`
//! writes it, operation for operation), and what the packed kernel computes, one value at a
//! time from the packed tiles. The tests hold the packing to the first and the SIMD kernel to
//! the second.

use half::f16;

use super::{BLOCK, BLOCK_BYTES, PackedQ5_0, TILE_ROWS};
use crate::activations::{QuantizedRows, Scheme};

/// ggml's `dequantize_row_q5_0` over whole blocks of GGUF bytes.
pub(super) fn dequantize_gguf(data: &[u8]) -> Vec<f32> {
    let mut out = vec![0f32; data.len() / BLOCK_BYTES * BLOCK];
    for (x, ys) in data
        .chunks_exact(BLOCK_BYTES)
        .zip(out.chunks_exact_mut(BLOCK))
    {
        let d = f16::from_le_bytes([x[0], x[1]]).to_f32();
        let qh = u32::from_le_bytes([x[2], x[3], x[4], x[5]]);
        let qs = &x[6..];
        for j in 0..BLOCK / 2 {
            let xh_0 = (((qh >> j) << 4) & 0x10) as u8;
            let xh_1 = ((qh >> (j + 12)) & 0x10) as u8;
            let x0 = ((qs[j] & 0x0f) | xh_0) as i32 - 16;
            let x1 = ((qs[j] >> 4) | xh_1) as i32 - 16;
            ys[j] = (x0 as f32) * d;
            ys[j + BLOCK / 2] = (x1 as f32) * d;
        }
    }
    out
}

impl PackedQ5_0 {
    /// What [`PackedQ5_0::matmul`] computes, one value at a time, from the packed tiles.
    pub(super) fn matmul_reference(&self, lhs: &[f32], m: usize, out: &mut [f32]) {
        let acts = QuantizedRows::quantize(lhs, m, self.cols, 1, Scheme::Q8_0);
        let blocks = self.cols / BLOCK;
        for i in 0..m {
            for row in 0..self.rows {
                let (group, lane) = (row / TILE_ROWS, row % TILE_ROWS);
                let mut acc = 0f32;
                for block in 0..blocks {
                    let tile = &self.tiles[group * blocks + block];
                    let at = i * blocks + block;
                    let a = acts.values(at);
                    let sum: i32 = (0..BLOCK)
                        .map(|v| (i32::from(self.value(tile, lane, v)) - 16) * a[v])
                        .sum();
                    acc += sum as f32 * (tile.scales[lane].to_f32() * acts.scales[at]);
                }
                out[i * self.rows + row] = acc;
            }
        }
    }
}

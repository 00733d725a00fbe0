//! The scalar references: ggml's dequantization of the GGUF bytes (as candle's `to_float`
//! writes it, operation for operation), and what the packed kernel computes, one value at a
//! time from the packed tiles. The tests hold the packing to the first and the SIMD kernel to
//! the second.

use half::f16;

use super::{BLOCK, BLOCK_BYTES, PackedQ4_1, TILE_ROWS, qs_index};
use crate::activations::{QuantizedRows, Scheme};

/// ggml's `dequantize_row_q4_1` over whole blocks of GGUF bytes.
pub(super) fn dequantize_gguf(data: &[u8]) -> Vec<f32> {
    let mut out = vec![0f32; data.len() / BLOCK_BYTES * BLOCK];
    for (x, ys) in data
        .chunks_exact(BLOCK_BYTES)
        .zip(out.chunks_exact_mut(BLOCK))
    {
        let d = f16::from_le_bytes([x[0], x[1]]).to_f32();
        let m = f16::from_le_bytes([x[2], x[3]]).to_f32();
        for (j, &byte) in x[4..].iter().enumerate() {
            ys[j] = f32::from(byte & 0x0f) * d + m;
            ys[j + BLOCK / 2] = f32::from(byte >> 4) * d + m;
        }
    }
    out
}

impl PackedQ4_1 {
    /// What [`PackedQ4_1::matmul`] computes, in the same order per block.
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
                    let mut dot = 0i32;
                    for j in 0..BLOCK / 2 {
                        let byte = tile.qs[qs_index(lane, j)];
                        dot += i32::from(byte & 0x0f) * a[j] + i32::from(byte >> 4) * a[j + 16];
                    }
                    let a_sum: i32 = a.iter().sum();
                    let (d, min) = (tile.d[lane].to_f32(), tile.m[lane].to_f32());
                    acc += dot as f32 * (d * acts.scales[at]);
                    acc += min * (a_sum as f32 * acts.scales[at]);
                }
                out[i * self.rows + row] = acc;
            }
        }
    }
}

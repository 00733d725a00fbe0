//! The scalar references: ggml's dequantization of the GGUF bytes (as candle's `to_float`
//! writes it, operation for operation), and what the packed kernels compute, one value at a
//! time from the packed tiles. The tests hold the packing to the first and the SIMD kernels to
//! the second.

use half::f16;

use super::{BLOCK, BLOCK_BYTES, PackedQ5_K, SUBS, SUPER, TILE_ROWS, qs_index, scale_min};
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
    /// What [`PackedQ5_K::matmul`] computes, in the same order per sub-block.
    pub(super) fn matmul_reference(&self, lhs: &[f32], m: usize, out: &mut [f32]) {
        let acts = QuantizedRows::quantize(lhs, m, self.cols, 1, Scheme::Q8_K);
        let (blocks, supers) = (self.cols / BLOCK, self.cols / SUPER);
        for i in 0..m {
            for row in 0..self.rows {
                let (group, lane) = (row / TILE_ROWS, row % TILE_ROWS);
                let mut acc = 0f32;
                for block in 0..blocks {
                    let (s, j) = (block / SUBS, block % SUBS);
                    let tile = &self.tiles[group * supers + s];
                    let at = i * blocks + block;
                    let a = acts.values(at);
                    let mut dot = 0i32;
                    for b in 0..BLOCK / 2 {
                        let byte = tile.qs[j][qs_index(lane, b)];
                        let low = (byte & 0x0f) | Self::fifth(tile, j, lane, b);
                        let high = (byte >> 4) | Self::fifth(tile, j, lane, b + 16);
                        dot += i32::from(low) * a[b] + i32::from(high) * a[b + 16];
                    }
                    let dot = dot * i32::from(tile.scales[j][lane]);
                    let a_sum = a.iter().sum::<i32>() as f32 * acts.scales[at];
                    let min = tile.dmin[lane].to_f32() * f32::from(tile.mins[j][lane]);
                    acc += dot as f32 * (tile.d[lane].to_f32() * acts.scales[at]);
                    acc -= min * a_sum;
                }
                out[i * self.rows + row] = acc;
            }
        }
    }
}

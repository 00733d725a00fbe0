//! The scalar references: ggml's dequantization of the GGUF bytes (as candle's `to_float`
//! writes it, operation for operation), and what the packed kernel computes, one value at a
//! time from the packed tiles. The tests hold the packing to the first and the SIMD kernel to
//! the second.

use half::f16;

use super::{BLOCK, BLOCK_BYTES, PackedQ3_K, SUBS, SUPER, TILE_ROWS};
use crate::activations::{QuantizedRows, Scheme};

/// ggml's `dequantize_row_q3_K` over whole super-blocks of GGUF bytes, written from its loops
/// (not from this module's `decode`), scales unpacked through its u32 masks.
pub(super) fn dequantize_gguf(data: &[u8]) -> Vec<f32> {
    const KMASK1: u32 = 0x0303_0303;
    const KMASK2: u32 = 0x0f0f_0f0f;
    let mut out = Vec::with_capacity(data.len() / BLOCK_BYTES * SUPER);
    for x in data.chunks_exact(BLOCK_BYTES) {
        let (hm, qs, sc) = (&x[..32], &x[32..96], &x[96..108]);
        let d_all = f16::from_le_bytes([x[108], x[109]]).to_f32();
        let word =
            |i: usize| u32::from_le_bytes([sc[4 * i], sc[4 * i + 1], sc[4 * i + 2], sc[4 * i + 3]]);
        let (a0, a1, tmp) = (word(0), word(1), word(2));
        let aux = [
            (a0 & KMASK2) | ((tmp & KMASK1) << 4),
            (a1 & KMASK2) | (((tmp >> 2) & KMASK1) << 4),
            ((a0 >> 4) & KMASK2) | (((tmp >> 4) & KMASK1) << 4),
            ((a1 >> 4) & KMASK2) | (((tmp >> 6) & KMASK1) << 4),
        ];
        let scales: Vec<i8> = aux
            .iter()
            .flat_map(|a| a.to_le_bytes().map(|b| b as i8))
            .collect();
        let (mut is, mut m) = (0, 1u8);
        for q in qs.chunks_exact(32) {
            for shift in (0..8).step_by(2) {
                for half in 0..2 {
                    let dl = d_all * (f32::from(scales[is]) - 32.0);
                    is += 1;
                    for l in 16 * half..16 * half + 16 {
                        let low = ((q[l] >> shift) & 3) as i8;
                        let value = low - if hm[l] & m == 0 { 4 } else { 0 };
                        out.push(dl * f32::from(value));
                    }
                }
                m <<= 1;
            }
        }
    }
    out
}

impl PackedQ3_K {
    /// What [`PackedQ3_K::matmul`] computes: per super-block, each half sub-block's integer
    /// sum times its scale, added exactly in integers, then scaled once by `d` and the
    /// super-block's shared activation scale.
    pub(super) fn matmul_reference(&self, lhs: &[f32], m: usize, out: &mut [f32]) {
        let acts = QuantizedRows::quantize(lhs, m, self.cols, 1, Scheme::Q8_K);
        let (blocks, supers) = (self.cols / BLOCK, self.cols / SUPER);
        for i in 0..m {
            for row in 0..self.rows {
                let (group, lane) = (row / TILE_ROWS, row % TILE_ROWS);
                let mut acc = 0f32;
                for s in 0..supers {
                    let tile = &self.tiles[group * supers + s];
                    let mut dot = 0i64;
                    for j in 0..SUBS {
                        let a = acts.values(i * blocks + s * SUBS + j);
                        for half in 0..2 {
                            let sum: i32 = (16 * half..16 * half + 16)
                                .map(|v| (i32::from(self.value(tile, j, lane, v)) - 4) * a[v])
                                .sum();
                            dot += i64::from(sum * i32::from(tile.scales[j][half][lane]));
                        }
                    }
                    let a_scale = acts.scales[i * blocks + s * SUBS];
                    acc += dot as f32 * (tile.d[lane].to_f32() * a_scale);
                }
                out[i * self.rows + row] = acc;
            }
        }
    }
}

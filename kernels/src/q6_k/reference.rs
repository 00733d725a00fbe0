//! The scalar references: ggml's dequantization of the GGUF bytes (as candle's `to_float`
//! writes it, operation for operation), and what the packed kernel computes, one value at a
//! time from the packed tiles. The tests hold the packing to the first and the SIMD kernel to
//! the second.

use half::f16;

use super::{BLOCK, BLOCK_BYTES, PackedQ6_K, SUBS, SUPER, TILE_ROWS};
use crate::activations::{QuantizedRows, Scheme};

/// ggml's `dequantize_row_q6_K` over whole super-blocks of GGUF bytes.
pub(super) fn dequantize_gguf(data: &[u8]) -> Vec<f32> {
    let mut out = vec![0f32; data.len() / BLOCK_BYTES * SUPER];
    for (x, ys) in data
        .chunks_exact(BLOCK_BYTES)
        .zip(out.chunks_exact_mut(SUPER))
    {
        let (ql, qh, sc) = (&x[..128], &x[128..192], &x[192..208]);
        let d = f16::from_le_bytes([x[208], x[209]]).to_f32();
        for n in (0..SUPER).step_by(128) {
            let idx = n / 128;
            let ys = &mut ys[n..];
            let (sc, ql, qh) = (&sc[8 * idx..], &ql[64 * idx..], &qh[32 * idx..]);
            for l in 0..32 {
                let is = l / 16;
                let q1 = ((ql[l] & 0xf) | ((qh[l] & 3) << 4)) as i8 - 32;
                let q2 = ((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) as i8 - 32;
                let q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) as i8 - 32;
                let q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) as i8 - 32;
                let scale = |i: usize| d * f32::from(sc[i] as i8);
                ys[l] = scale(is) * f32::from(q1);
                ys[l + 32] = scale(is + 2) * f32::from(q2);
                ys[l + 64] = scale(is + 4) * f32::from(q3);
                ys[l + 96] = scale(is + 6) * f32::from(q4);
            }
        }
    }
    out
}

impl PackedQ6_K {
    /// What [`PackedQ6_K::matmul`] computes: per super-block, each half sub-block's integer
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
                        let at = i * blocks + s * SUBS + j;
                        let a = acts.values(at);
                        for half in 0..2 {
                            let sum: i32 = (16 * half..16 * half + 16)
                                .map(|b| (i32::from(self.value(tile, j, lane, b)) - 32) * a[b])
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

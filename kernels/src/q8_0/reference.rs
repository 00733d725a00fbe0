//! The scalar reference for the packed kernel: the same quantized values, the same per-block
//! order of summation, plain Rust. The SIMD kernel is tested against it.

use super::{BLOCK, PackedQ8_0, TILE_ROWS};
use crate::activations::{QuantizedRows, Scheme};

impl PackedQ8_0 {
    /// What [`PackedQ8_0::matmul`] computes, one value at a time.
    pub(super) fn matmul_reference(&self, lhs: &[f32], m: usize, out: &mut [f32]) {
        let acts = QuantizedRows::quantize(lhs, m, self.cols, 1, Scheme::Q8_0);
        let blocks = self.cols / BLOCK;
        let bias = super::weight_bias(self.isa);
        for i in 0..m {
            for row in 0..self.rows {
                let (group, lane) = (row / TILE_ROWS, row % TILE_ROWS);
                let mut acc = 0f32;
                for block in 0..blocks {
                    let tile = &self.tiles[group * blocks + block];
                    let at = i * blocks + block;
                    // Integer sums are exact, so the signed weights give what the offset
                    // weights plus the activation block's correction give.
                    let mut sum = 0i32;
                    for (word, packed) in acts.words[at].iter().enumerate() {
                        for (t, a) in packed.to_le_bytes().into_iter().enumerate() {
                            let w = (tile.qs[(word * TILE_ROWS + lane) * 4 + t] ^ bias) as i8;
                            sum += i32::from(w) * i32::from(a as i8);
                        }
                    }
                    acc += sum as f32 * (tile.scales[lane].to_f32() * acts.scales[at]);
                }
                out[i * self.rows + row] = acc;
            }
        }
    }
}

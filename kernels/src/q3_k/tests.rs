use crate::weight_arena::WeightArena;
use half::f16;

use super::reference::dequantize_gguf;
use super::{BLOCK_BYTES, PackedQ3_K, SUPER};
use crate::format_checks::packed_format_tests;
use crate::isa::kernels_here;
use crate::test_support::Lcg;

/// Random GGUF Q3_K bytes for a `rows` × `cols` matrix: random 3-bit values and 6-bit
/// scales, `d` spread over an order of magnitude.
fn random_q3_k(rng: &mut Lcg, rows: usize, cols: usize) -> Vec<u8> {
    let mut data = Vec::with_capacity(rows * cols / SUPER * BLOCK_BYTES);
    for _ in 0..rows * cols / SUPER {
        data.extend((0..BLOCK_BYTES - 2).map(|_| (rng.next() % 256) as u8));
        let d = f16::from_f32(0.00002 + rng.float().abs() * 0.0002);
        data.extend_from_slice(&d.to_le_bytes());
    }
    data
}

/// Super-blocks whose 3-bit values are all `q` (0 or 7) and scales all `scale` (0..64, the
/// stored form: it means `scale − 32`).
fn uniform_q3_k(rows: usize, cols: usize, q: u8, scale: u8) -> Vec<u8> {
    let bits = if q == 0 { 0 } else { 0xff };
    let (low, high) = (scale & 0x0f, scale >> 4);
    let mut data = Vec::new();
    for _ in 0..rows * cols / SUPER {
        data.extend([bits; SUPER / 8 + SUPER / 4]);
        data.extend([low | (low << 4); 8]);
        data.extend([high | (high << 2) | (high << 4) | (high << 6); 4]);
        data.extend_from_slice(&f16::from_f32(1.0).to_le_bytes());
    }
    data
}

/// Random rows with one super-block at the largest finite f16 `d`.
fn extreme_rows() -> (Vec<u8>, usize, usize) {
    let mut data = random_q3_k(&mut Lcg(41), 32, 512);
    data[BLOCK_BYTES - 2..BLOCK_BYTES].copy_from_slice(&f16::MAX.to_le_bytes());
    (data, 32, 512)
}

packed_format_tests!(
    PackedQ3_K,
    block: (SUPER, BLOCK_BYTES),
    random: random_q3_k,
    decode: dequantize_gguf,
    portable: |isa, data, rows, cols| PackedQ3_K::pack_portable(&WeightArena::one_run_each(), isa, data, rows, cols),
    rows: extreme_rows(),
    dense: [(1, 16, 256), (3, 32, 512), (5, 48, 1024)],
    kernels: [(16, 256), (48, 512), (64, 1024)],
);

#[test]
fn the_extreme_values_do_not_overflow_the_integer_sums() {
    for isa in kernels_here() {
        let (rows, cols) = (16, 512);
        // Values 7 or 0 (3 or −4 after the offset) at scales 63 or 0 (31 or −32), against
        // activations at ±127 after quantizing.
        for (q, scale) in [(7, 63), (0, 63), (7, 0), (0, 0)] {
            let data = uniform_q3_k(rows, cols, q, scale);
            let packed = PackedQ3_K::pack_for(isa, &data, rows, cols).unwrap();
            let value = (f32::from(scale) - 32.0) * (f32::from(q) - 4.0);
            for sign in [-1f32, 1.0] {
                let lhs = vec![sign; cols];
                let mut out = vec![0f32; rows];
                packed.matmul(&lhs, 1, &mut out, 1);
                let want = sign * value * cols as f32;
                for got in out {
                    // Only the f32 rounding of the activation scale and the sums separates the two.
                    assert!((got - want).abs() <= want.abs() * 1e-3, "{got} != {want}");
                }
            }
        }
    }
}

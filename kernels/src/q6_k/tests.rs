use crate::weight_arena::WeightArena;
use half::f16;

use super::reference::dequantize_gguf;
use super::{BLOCK_BYTES, PackedQ6_K, SUPER};
use crate::format_checks::packed_format_tests;
use crate::isa::kernels_here;
use crate::test_support::Lcg;

/// Random GGUF Q6_K bytes for a `rows` × `cols` matrix: random 6-bit values and signed
/// scales, `d` spread over an order of magnitude.
fn random_q6_k(rng: &mut Lcg, rows: usize, cols: usize) -> Vec<u8> {
    let mut data = Vec::with_capacity(rows * cols / SUPER * BLOCK_BYTES);
    for _ in 0..rows * cols / SUPER {
        data.extend((0..BLOCK_BYTES - 2).map(|_| (rng.next() % 256) as u8));
        let d = f16::from_f32(0.00002 + rng.float().abs() * 0.0002);
        data.extend_from_slice(&d.to_le_bytes());
    }
    data
}

/// Super-blocks whose 6-bit values are all `q` (0 or 63) and scales all `scale`.
fn uniform_q6_k(rows: usize, cols: usize, q: u8, scale: i8) -> Vec<u8> {
    let bits = if q == 0 { 0 } else { 0xff };
    let mut data = Vec::new();
    for _ in 0..rows * cols / SUPER {
        data.extend([bits; SUPER / 2 + SUPER / 4]);
        data.extend([scale as u8; SUPER / 16]);
        data.extend_from_slice(&f16::from_f32(1.0).to_le_bytes());
    }
    data
}

/// Random rows with one super-block at the largest finite f16 `d`.
fn extreme_rows() -> (Vec<u8>, usize, usize) {
    let mut data = random_q6_k(&mut Lcg(41), 32, 512);
    data[BLOCK_BYTES - 2..BLOCK_BYTES].copy_from_slice(&f16::MAX.to_le_bytes());
    (data, 32, 512)
}

packed_format_tests!(
    PackedQ6_K,
    block: (SUPER, BLOCK_BYTES),
    random: random_q6_k,
    decode: dequantize_gguf,
    portable: |isa, data, rows, cols| PackedQ6_K::pack_portable(&WeightArena::one_run_each(), isa, data, rows, cols),
    rows: extreme_rows(),
    dense: [(1, 16, 256), (3, 32, 512), (5, 48, 1024)],
    kernels: [(16, 256), (48, 512), (64, 1024), (32, 4864)],
);

#[test]
fn the_extreme_values_do_not_overflow_the_integer_sums() {
    for isa in kernels_here() {
        let (rows, cols) = (16, 512);
        // Values 63 or 0 (31 or −32 after the offset) at scales −128 or 127, against activations
        // at ±127 after quantizing: a sub-block's integer sum reaches 2 · 128 · 16 · 32 · 127.
        for (q, scale) in [(63, 127), (0, 127), (63, -128), (0, -128)] {
            let data = uniform_q6_k(rows, cols, q, scale);
            let packed = PackedQ6_K::pack_for(isa, &data, rows, cols).unwrap();
            let value = f32::from(scale) * (f32::from(q) - 32.0);
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

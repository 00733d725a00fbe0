use crate::weight_arena::WeightArena;
use half::f16;

use super::reference::dequantize_gguf;
use super::{BLOCK_BYTES, PackedQ2_K, SUPER};
use crate::format_checks::packed_format_tests;
use crate::isa::kernels_here;
use crate::test_support::Lcg;

/// Random GGUF Q2_K bytes for a `rows` × `cols` matrix: random 2-bit values, scales and
/// mins, `d` and `dmin` spread over an order of magnitude.
fn random_q2_k(rng: &mut Lcg, rows: usize, cols: usize) -> Vec<u8> {
    let mut data = Vec::with_capacity(rows * cols / SUPER * BLOCK_BYTES);
    for _ in 0..rows * cols / SUPER {
        data.extend((0..BLOCK_BYTES - 4).map(|_| (rng.next() % 256) as u8));
        for _ in 0..2 {
            let d = f16::from_f32(0.00002 + rng.float().abs() * 0.0002);
            data.extend_from_slice(&d.to_le_bytes());
        }
    }
    data
}

/// Random rows with one super-block at the largest finite f16 `d`, another at that `dmin`.
fn extreme_rows() -> (Vec<u8>, usize, usize) {
    let mut data = random_q2_k(&mut Lcg(41), 32, 512);
    data[BLOCK_BYTES - 4..BLOCK_BYTES - 2].copy_from_slice(&f16::MAX.to_le_bytes());
    data[2 * BLOCK_BYTES - 2..2 * BLOCK_BYTES].copy_from_slice(&f16::MAX.to_le_bytes());
    (data, 32, 512)
}

packed_format_tests!(
    PackedQ2_K,
    block: (SUPER, BLOCK_BYTES),
    random: random_q2_k,
    decode: dequantize_gguf,
    portable: |isa, data, rows, cols| PackedQ2_K::pack_portable(&WeightArena::one_run_each(), isa, data, rows, cols),
    rows: extreme_rows(),
    dense: [(1, 16, 256), (3, 32, 512), (5, 48, 1024)],
    kernels: [(16, 256), (48, 512), (64, 1024)],
);
/// Super-blocks whose 2-bit values are all `q` (0 or 3), scales all `sc` and mins all `m`,
/// with `d` and `dmin` of 1.
fn uniform_q2_k(rows: usize, cols: usize, q: u8, sc: u8, m: u8) -> Vec<u8> {
    let bits = if q == 0 { 0 } else { 0xff };
    let mut data = Vec::new();
    for _ in 0..rows * cols / SUPER {
        data.extend([sc | (m << 4); SUPER / 16]);
        data.extend([bits; SUPER / 4]);
        for _ in 0..2 {
            data.extend_from_slice(&f16::from_f32(1.0).to_le_bytes());
        }
    }
    data
}

#[test]
fn the_extreme_values_do_not_overflow_the_integer_sums() {
    for isa in kernels_here() {
        let (rows, cols) = (16, 512);
        // Values 3 or 0 at scales and mins of 15 or 0, against activations at ±127 after
        // quantizing.
        for (q, sc, m) in [(3, 15, 15), (3, 15, 0), (0, 15, 15), (3, 0, 15)] {
            let data = uniform_q2_k(rows, cols, q, sc, m);
            let packed = PackedQ2_K::pack_for(isa, &data, rows, cols).unwrap();
            let value = f32::from(sc) * f32::from(q) - f32::from(m);
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

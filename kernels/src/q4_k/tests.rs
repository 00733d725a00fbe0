use crate::weight_arena::WeightArena;
use half::f16;

use super::reference::dequantize_gguf;
use super::{BLOCK_BYTES, PackedQ4_K, SUPER};
use crate::format_checks::packed_format_tests;
use crate::isa::kernels_here;
use crate::test_support::Lcg;

/// Random GGUF Q4_K bytes for a `rows` × `cols` matrix: random nibbles and 6-bit scales and
/// mins, `d` and `dmin` spread over two orders of magnitude.
fn random_q4_k(rng: &mut Lcg, rows: usize, cols: usize) -> Vec<u8> {
    let mut data = Vec::with_capacity(rows * cols / SUPER * BLOCK_BYTES);
    for _ in 0..rows * cols / SUPER {
        let d = f16::from_f32(0.0002 + rng.float().abs() * 0.002);
        let dmin = f16::from_f32(0.0002 + rng.float().abs() * 0.004);
        data.extend_from_slice(&d.to_le_bytes());
        data.extend_from_slice(&dmin.to_le_bytes());
        data.extend((0..BLOCK_BYTES - 4).map(|_| (rng.next() % 256) as u8));
    }
    data
}

/// Super-blocks of one byte repeated (`0xff`: every scale, min and nibble at its maximum).
fn uniform_q4_k(rows: usize, cols: usize, d: f32, dmin: f32, byte: u8) -> Vec<u8> {
    let mut data = Vec::new();
    for _ in 0..rows * cols / SUPER {
        data.extend_from_slice(&f16::from_f32(d).to_le_bytes());
        data.extend_from_slice(&f16::from_f32(dmin).to_le_bytes());
        data.extend([byte; BLOCK_BYTES - 4]);
    }
    data
}

/// Random rows with one super-block at the largest finite f16 `d` and `dmin`.
fn extreme_rows() -> (Vec<u8>, usize, usize) {
    let mut data = random_q4_k(&mut Lcg(29), 32, 512);
    data[..2].copy_from_slice(&f16::MAX.to_le_bytes());
    data[2..4].copy_from_slice(&f16::MAX.to_le_bytes());
    (data, 32, 512)
}

packed_format_tests!(
    PackedQ4_K,
    block: (SUPER, BLOCK_BYTES),
    random: random_q4_k,
    decode: dequantize_gguf,
    portable: |isa, data, rows, cols| PackedQ4_K::pack_portable(&WeightArena::one_run_each(), isa, data, rows, cols),
    rows: extreme_rows(),
    dense: [(1, 16, 256), (3, 32, 512), (5, 48, 1024)],
    kernels: [(16, 256), (48, 512), (64, 1024)],
);

#[test]
fn the_extreme_values_do_not_overflow_the_integer_sums() {
    for isa in kernels_here() {
        let (rows, cols) = (16, 512);
        // Every nibble, scale and min at 63 or 15 against activations at −127 after quantizing:
        // `d · 63 · 15 − dmin · 63` per weight.
        for (d, dmin) in [(1.0, 0.0), (0.0, 1.0), (1.0, 1.0)] {
            let data = uniform_q4_k(rows, cols, d, dmin, 0xff);
            let packed = PackedQ4_K::pack_for(isa, &data, rows, cols).unwrap();
            let lhs = vec![-1f32; cols];
            let mut out = vec![0f32; rows];
            packed.matmul(&lhs, 1, &mut out, 1);
            let want = -(d * 63.0 * 15.0 - dmin * 63.0) * cols as f32;
            for got in out {
                // Only the f32 rounding of the activation scale and the sums separates the two.
                assert!((got - want).abs() <= want.abs() * 1e-3, "{got} != {want}");
            }
        }
    }
}

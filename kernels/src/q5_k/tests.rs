use crate::weight_arena::WeightArena;
use half::f16;

use super::reference::dequantize_gguf;
use super::{BLOCK_BYTES, PackedQ5_K, SUPER};
use crate::format_checks::packed_format_tests;
use crate::isa::kernels_here;
use crate::test_support::Lcg;

/// Random GGUF Q5_K bytes for a `rows` × `cols` matrix: random nibbles, fifth bits, 6-bit
/// scales and mins, `d` and `dmin` spread over two orders of magnitude.
fn random_q5_k(rng: &mut Lcg, rows: usize, cols: usize) -> Vec<u8> {
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

/// Super-blocks whose 12 scale bytes are all `scales` and whose fifth bits and nibbles are all
/// `bits` (`0xff`, `0xff`: every scale, min and value at its maximum).
fn uniform_q5_k(rows: usize, cols: usize, d: f32, dmin: f32, scales: u8, bits: u8) -> Vec<u8> {
    let mut data = Vec::new();
    for _ in 0..rows * cols / SUPER {
        data.extend_from_slice(&f16::from_f32(d).to_le_bytes());
        data.extend_from_slice(&f16::from_f32(dmin).to_le_bytes());
        data.extend([scales; 12]);
        data.extend([bits; BLOCK_BYTES - 16]);
    }
    data
}

/// Random rows with one super-block at the largest finite f16 `d` and `dmin`.
fn extreme_rows() -> (Vec<u8>, usize, usize) {
    let mut data = random_q5_k(&mut Lcg(29), 32, 512);
    data[..2].copy_from_slice(&f16::MAX.to_le_bytes());
    data[2..4].copy_from_slice(&f16::MAX.to_le_bytes());
    (data, 32, 512)
}

packed_format_tests!(
    PackedQ5_K,
    block: (SUPER, BLOCK_BYTES),
    random: random_q5_k,
    decode: dequantize_gguf,
    portable: |isa, data, rows, cols| PackedQ5_K::pack_portable(&WeightArena::one_run_each(), isa, data, rows, cols),
    rows: extreme_rows(),
    dense: [(1, 16, 256), (3, 32, 512), (5, 48, 1024)],
    kernels: [(16, 256), (48, 512), (64, 1024), (32, 4864)],
);

#[test]
fn the_extreme_values_do_not_overflow_the_integer_sums() {
    for isa in kernels_here() {
        let (rows, cols) = (16, 512);
        // Every scale and min at 63, every value at 31 or 0, against activations at −127 after
        // quantizing: `d · 63 · q − dmin · 63` per weight. (For AVX2's sums of `q − 16`, 0 is
        // the far end.)
        for (d, dmin, bits, q) in [
            (1.0, 0.0, 0xff, 31.0),
            (0.0, 1.0, 0xff, 31.0),
            (1.0, 1.0, 0xff, 31.0),
            (1.0, 0.5, 0x00, 0.0),
        ] {
            let data = uniform_q5_k(rows, cols, d, dmin, 0xff, bits);
            let packed = PackedQ5_K::pack_for(isa, &data, rows, cols).unwrap();
            for m in [1, 7] {
                let lhs = vec![-1f32; m * cols];
                let mut out = vec![0f32; m * rows];
                packed.matmul(&lhs, m, &mut out, 1);
                let want = -(d * 63.0 * q - dmin * 63.0) * cols as f32;
                for got in out {
                    // Only the f32 rounding of the activation scale and the sums separates the two.
                    assert!(
                        (got - want).abs() <= want.abs() * 1e-3,
                        "{isa:?} q {q}: {got} != {want}"
                    );
                }
            }
        }
    }
}

use crate::weight_arena::WeightArena;
use half::f16;

use super::reference::dequantize_gguf;
use super::{BLOCK, BLOCK_BYTES, PackedQ4_1};
use crate::format_checks::packed_format_tests;
use crate::isa::kernels_here;
use crate::test_support::Lcg;

/// Random GGUF Q4_1 bytes for a `rows` × `cols` matrix.
fn random_q4_1(rng: &mut Lcg, rows: usize, cols: usize) -> Vec<u8> {
    let mut data = Vec::with_capacity(rows * cols / BLOCK * BLOCK_BYTES);
    for _ in 0..rows * cols / BLOCK {
        let scale = f16::from_f32(0.001 + rng.float().abs() * 0.02);
        let offset = f16::from_f32(rng.float() * 0.3);
        data.extend_from_slice(&scale.to_le_bytes());
        data.extend_from_slice(&offset.to_le_bytes());
        data.extend((0..BLOCK / 2).map(|_| (rng.next() % 256) as u8));
    }
    data
}

/// Blocks with scale `d`, offset `m` and every value `q`.
fn uniform_q4_1(rows: usize, cols: usize, d: f32, m: f32, q: u8) -> Vec<u8> {
    let mut data = Vec::new();
    for _ in 0..rows * cols / BLOCK {
        data.extend_from_slice(&f16::from_f32(d).to_le_bytes());
        data.extend_from_slice(&f16::from_f32(m).to_le_bytes());
        data.extend([q | (q << 4); BLOCK / 2]);
    }
    data
}

packed_format_tests!(
    PackedQ4_1,
    block: (BLOCK, BLOCK_BYTES),
    random: random_q4_1,
    decode: dequantize_gguf,
    portable: |isa, data, rows, cols| PackedQ4_1::pack_portable(&WeightArena::one_run_each(), isa, data, rows, cols),
    rows: (random_q4_1(&mut Lcg(53), 32, 128), 32, 128),
    dense: [(1, 16, 32), (3, 32, 96), (5, 48, 896)],
    kernels: [(16, 32), (48, 96), (64, 896)],
);

/// The reference decoder reads the block layout as the format defines it: value `j` in the
/// low nibble of byte `j`, value `j + 16` in its high one, then `d · q + m`.
#[test]
fn the_gguf_reference_decodes_a_hand_made_block() {
    let mut block = f16::from_f32(0.5).to_le_bytes().to_vec();
    block.extend_from_slice(&f16::from_f32(-1.0).to_le_bytes());
    let mut qs = [0u8; BLOCK / 2];
    qs[1] = 0x5a;
    block.extend_from_slice(&qs);
    let mut want = [-1f32; BLOCK];
    want[1] = 10.0 * 0.5 - 1.0;
    want[17] = 5.0 * 0.5 - 1.0;
    assert_eq!(dequantize_gguf(&block), want);
}

#[test]
fn the_extreme_values_do_not_overflow_the_integer_sums() {
    for isa in kernels_here()
        .into_iter()
        .filter(|_| PackedQ4_1::supported())
    {
        let (rows, cols) = (16, 896);
        // Values 15 or 0 against activations at ±127 after quantizing: a lane's i16 sum
        // reaches 16 · 15 · 127.
        for (q, m) in [(15, 0.0), (15, -2.0), (0, 3.0)] {
            let data = uniform_q4_1(rows, cols, 1.0, m, q);
            let packed = PackedQ4_1::pack_for(isa, &data, rows, cols).unwrap();
            let value = f32::from(q) + m;
            for sign in [-1f32, 1.0] {
                let lhs = vec![sign; cols];
                let mut out = vec![0f32; rows];
                packed.matmul(&lhs, 1, &mut out, 1);
                let want = sign * value * cols as f32;
                for got in out {
                    // Only the activation scale's f16 rounding separates the two.
                    assert!((got - want).abs() <= want.abs() * 1e-3, "{got} != {want}");
                }
            }
        }
    }
}

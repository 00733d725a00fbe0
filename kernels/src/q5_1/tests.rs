use crate::weight_arena::WeightArena;
use half::f16;

use super::reference::dequantize_gguf;
use super::{BLOCK, BLOCK_BYTES, PackedQ5_1};
use crate::format_checks::packed_format_tests;
use crate::isa::kernels_here;
use crate::test_support::Lcg;

/// Random GGUF Q5_1 bytes for a `rows` × `cols` matrix.
fn random_q5_1(rng: &mut Lcg, rows: usize, cols: usize) -> Vec<u8> {
    let mut data = Vec::with_capacity(rows * cols / BLOCK * BLOCK_BYTES);
    for _ in 0..rows * cols / BLOCK {
        let scale = f16::from_f32(0.001 + rng.float().abs() * 0.02);
        let offset = f16::from_f32(rng.float() * 0.3);
        data.extend_from_slice(&scale.to_le_bytes());
        data.extend_from_slice(&offset.to_le_bytes());
        data.extend_from_slice(&rng.next().to_le_bytes());
        data.extend((0..BLOCK / 2).map(|_| (rng.next() % 256) as u8));
    }
    data
}

/// The GGUF bytes of `rows × cols / 32` blocks, each with scale `d`, offset `m` and every
/// value `q`.
fn uniform_q5_1(rows: usize, cols: usize, d: f32, m: f32, q: u8) -> Vec<u8> {
    let qh: u32 = if q >= 16 { u32::MAX } else { 0 };
    let nibbles = (q & 0x0f) | ((q & 0x0f) << 4);
    let mut data = Vec::new();
    for _ in 0..rows * cols / BLOCK {
        data.extend_from_slice(&f16::from_f32(d).to_le_bytes());
        data.extend_from_slice(&f16::from_f32(m).to_le_bytes());
        data.extend_from_slice(&qh.to_le_bytes());
        data.extend([nibbles; BLOCK / 2]);
    }
    data
}

packed_format_tests!(
    PackedQ5_1,
    block: (BLOCK, BLOCK_BYTES),
    random: random_q5_1,
    decode: dequantize_gguf,
    portable: |isa, data, rows, cols| PackedQ5_1::pack_portable(&WeightArena::one_run_each(), isa, data, rows, cols),
    rows: (random_q5_1(&mut Lcg(23), 32, 96), 32, 96),
    dense: [(1, 16, 32), (3, 32, 96), (5, 48, 896)],
    kernels: [(16, 32), (48, 96), (64, 896), (32, 4864)],
);

/// The reference decoder reads the block layout as the format defines it: a value's fifth
/// bit from `qh`, its low bits from the nibble of byte `v % 16`, then `d · q + m`.
#[test]
fn the_gguf_reference_decodes_a_hand_made_block() {
    let mut block = f16::from_f32(0.5).to_le_bytes().to_vec();
    block.extend_from_slice(&f16::from_f32(-1.0).to_le_bytes());
    // Fifth bits set for values 0, 3 and 17.
    block.extend_from_slice(&((1u32 << 0) | (1 << 3) | (1 << 17)).to_le_bytes());
    // Byte 1: value 1 low nibble 0xa, value 17 low nibble 0x5; all others 0.
    let mut qs = [0u8; BLOCK / 2];
    qs[1] = 0x5a;
    block.extend_from_slice(&qs);
    let got = dequantize_gguf(&block);
    let mut want = [-1f32; BLOCK]; // 0 · 0.5 − 1
    want[0] = 16.0 * 0.5 - 1.0;
    want[3] = 16.0 * 0.5 - 1.0;
    want[1] = 0xa as f32 * 0.5 - 1.0;
    want[17] = 0x15 as f32 * 0.5 - 1.0;
    assert_eq!(got, want);
}

/// Every value 31, 0 or 16 against activations of one sign at the quantized maximum: on AVX2
/// the unsigned i16 sums wrap, and only the true sums must come out.
#[test]
fn the_extreme_values_do_not_overflow_the_i16_sums() {
    for isa in kernels_here() {
        let (rows, cols) = (16, 64);
        for (q, m) in [(31u8, -16.0), (0, -16.0), (16, -16.0), (31, 3.0), (0, 3.0)] {
            let data = uniform_q5_1(rows, cols, 1.0, m, q);
            let packed = PackedQ5_1::pack_for(isa, &data, rows, cols).unwrap();
            for sign in [1f32, -1.0] {
                for n in [1, 5] {
                    let lhs = vec![sign; n * cols];
                    let mut out = vec![0f32; n * rows];
                    packed.matmul(&lhs, n, &mut out, 1);
                    let want = sign * (f32::from(q) + m) * cols as f32;
                    for got in out {
                        // Only the activation scale's f16 rounding separates the two.
                        assert!(
                            (got - want).abs() <= want.abs().max(1.0) * 1e-3,
                            "{isa:?} {q} {m}: {got} != {want}"
                        );
                    }
                }
            }
        }
    }
}

use half::f16;

use super::reference::dequantize_gguf;
use super::{BLOCK, BLOCK_BYTES, PackedQ5_1};
use crate::isa::{Isa, kernels_here};
use crate::test_support::{Lcg, dense_matmul, max_relative_error, random_rows};
use crate::tiled::PackError;

/// Random GGUF Q5_1 bytes for a `rows` × `cols` matrix, and the matrix they decode to.
fn random_q5_1(rng: &mut Lcg, rows: usize, cols: usize) -> (Vec<u8>, Vec<f32>) {
    let mut data = Vec::with_capacity(rows * cols / BLOCK * BLOCK_BYTES);
    for _ in 0..rows * cols / BLOCK {
        let scale = f16::from_f32(0.001 + rng.float().abs() * 0.02);
        let offset = f16::from_f32(rng.float() * 0.3);
        data.extend_from_slice(&scale.to_le_bytes());
        data.extend_from_slice(&offset.to_le_bytes());
        data.extend_from_slice(&rng.next().to_le_bytes());
        data.extend((0..BLOCK / 2).map(|_| (rng.next() % 256) as u8));
    }
    let dense = dequantize_gguf(&data);
    (data, dense)
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

#[test]
fn the_reference_agrees_with_dense_math_on_the_unpacked_weights() {
    let mut rng = Lcg(53);
    for (m, rows, cols) in [(1, 16, 32), (3, 32, 96), (5, 48, 896)] {
        let (data, dense) = random_q5_1(&mut rng, rows, cols);
        let lhs = random_rows(&mut rng, m, cols);
        let packed = PackedQ5_1::pack_portable(Isa::Avx2, &data, rows, cols).unwrap();
        let mut got = vec![0f32; m * rows];
        packed.matmul_reference(&lhs, m, &mut got);
        let want = dense_matmul(&lhs, &dense, m, rows, cols);
        let err = max_relative_error(&got, &want);
        assert!(err < 0.02, "{m}x{rows}x{cols}: relative error {err}");
    }
}

#[test]
fn the_kernel_matches_the_reference_for_every_row_remainder_and_thread_count() {
    let mut rng = Lcg(59);
    for (isa, (rows, cols)) in kernels_here()
        .into_iter()
        .flat_map(|isa| [(16, 32), (48, 96), (64, 896), (32, 4864)].map(|shape| (isa, shape)))
    {
        let (data, _) = random_q5_1(&mut rng, rows, cols);
        let packed = PackedQ5_1::pack_for(isa, &data, rows, cols).unwrap();
        for m in [1, 2, 3, 7, 16, 33] {
            let lhs = random_rows(&mut rng, m, cols);
            let mut want = vec![0f32; m * rows];
            packed.matmul_reference(&lhs, m, &mut want);
            for threads in 1..=4 {
                let mut got = vec![f32::NAN; m * rows];
                packed.matmul(&lhs, m, &mut got, threads);
                let err = max_relative_error(&got, &want);
                assert!(
                    err < 1e-5,
                    "{isa:?} {m}x{rows}x{cols}, {threads} threads: {err}"
                );
            }
        }
    }
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

#[test]
fn dequantized_rows_are_the_gguf_reference_bit_for_bit() {
    let mut rng = Lcg(61);
    let (rows, cols) = (32, 96);
    let (data, dense) = random_q5_1(&mut rng, rows, cols);
    let packed = PackedQ5_1::pack_portable(Isa::Avx2, &data, rows, cols).unwrap();
    let mut row = vec![0f32; cols];
    for r in 0..rows {
        packed.dequantize_row(r, &mut row);
        let want = &dense[r * cols..(r + 1) * cols];
        assert!(
            row.iter()
                .zip(want)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "row {r}"
        );
    }
}

#[test]
fn shapes_and_lengths_that_do_not_pack_are_refused() {
    assert_eq!(
        PackedQ5_1::pack_portable(Isa::Avx2, &[0; BLOCK_BYTES * 8], 8, 32).err(),
        Some(PackError::Shape { rows: 8, cols: 32 })
    );
    assert_eq!(
        PackedQ5_1::pack_portable(Isa::Avx2, &[0; BLOCK_BYTES * 16], 16, 48).err(),
        Some(PackError::Shape { rows: 16, cols: 48 })
    );
    for len in [0, 16 * BLOCK_BYTES - 1, 16 * BLOCK_BYTES + 1] {
        assert!(matches!(
            PackedQ5_1::pack_portable(Isa::Avx2, &vec![0; len], 16, 32),
            Err(PackError::Length { got, want, .. }) if got == len && want == 16 * BLOCK_BYTES
        ));
    }
    // A crafted header's dimensions: `2^63 · 2 · 24` wraps to 0 in a release build.
    assert_eq!(
        PackedQ5_1::pack_portable(Isa::Avx2, &[], 1 << 63, 64).err(),
        Some(PackError::Overflow {
            rows: 1 << 63,
            cols: 64
        })
    );
}

/// `m · cols` and `m · rows` both wrap to 0 for `m = 2^60`: empty buffers must still be
/// refused before the kernel writes through its pointers.
#[test]
#[should_panic(expected = "lhs is not m x cols")]
fn a_row_count_whose_sizes_wrap_is_refused() {
    let packed = PackedQ5_1::pack_portable(Isa::Avx2, &[0; 16 * BLOCK_BYTES], 16, 32).unwrap();
    packed.matmul(&[], 1 << 60, &mut [], 1);
}

/// The packed tiles take 448 bytes for the file's 384: `d` and `m` widened to f32.
#[test]
fn the_packed_weight_stays_within_a_sixth_of_the_file_size() {
    let tile = std::mem::size_of::<super::Tile>();
    let file = 16 * BLOCK_BYTES;
    assert_eq!(tile, 448);
    assert!(tile as f64 <= file as f64 * 1.17, "{tile} against {file}");
}

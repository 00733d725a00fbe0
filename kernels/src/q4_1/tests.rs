use half::f16;

use super::reference::dequantize_gguf;
use super::{BLOCK, BLOCK_BYTES, PackedQ4_1};
use crate::isa::kernels_here;
use crate::test_support::{Lcg, dense_matmul, max_relative_error, random_rows};
use crate::tiled::PackError;

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
fn dequantized_rows_are_ggmls_dequantization_bit_for_bit() {
    let mut rng = Lcg(53);
    let (rows, cols) = (32, 128);
    let data = random_q4_1(&mut rng, rows, cols);
    let dense = dequantize_gguf(&data);
    let packed = PackedQ4_1::pack_portable(&data, rows, cols).unwrap();
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
fn the_reference_agrees_with_dense_math_on_the_unpacked_weights() {
    let mut rng = Lcg(59);
    for (m, rows, cols) in [(1, 16, 32), (3, 32, 96), (5, 48, 896)] {
        let data = random_q4_1(&mut rng, rows, cols);
        let dense = dequantize_gguf(&data);
        let lhs = random_rows(&mut rng, m, cols);
        let packed = PackedQ4_1::pack_portable(&data, rows, cols).unwrap();
        let mut got = vec![0f32; m * rows];
        packed.matmul_reference(&lhs, m, &mut got);
        let want = dense_matmul(&lhs, &dense, m, rows, cols);
        let err = max_relative_error(&got, &want);
        assert!(err < 0.02, "{m}x{rows}x{cols}: relative error {err}");
    }
}

#[test]
fn the_kernel_matches_the_reference_for_every_row_remainder_and_thread_count() {
    let mut rng = Lcg(61);
    if !PackedQ4_1::supported() {
        eprintln!("this CPU has no F16C: only the reference is tested");
    }
    for (isa, (rows, cols)) in kernels_here()
        .into_iter()
        .filter(|_| PackedQ4_1::supported())
        .flat_map(|isa| [(16, 32), (48, 96), (64, 896)].map(|shape| (isa, shape)))
    {
        let data = random_q4_1(&mut rng, rows, cols);
        let packed = PackedQ4_1::pack_for(isa, &data, rows, cols).unwrap();
        for m in [1, 2, 3, 4, 5, 7, 16, 33] {
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

#[test]
fn shapes_and_lengths_that_do_not_pack_are_refused() {
    for (rows, cols) in [(8, 32), (16, 48), (0, 32)] {
        assert_eq!(
            PackedQ4_1::pack_portable(&[], rows, cols).err(),
            Some(PackError::Shape { rows, cols })
        );
    }
    for len in [0, 16 * BLOCK_BYTES - 1, 16 * BLOCK_BYTES + 1] {
        assert!(matches!(
            PackedQ4_1::pack_portable(&vec![0; len], 16, 32),
            Err(PackError::Length { want, .. }) if want == 16 * BLOCK_BYTES
        ));
    }
    assert_eq!(
        PackedQ4_1::pack_portable(&[], 1 << 63, 32).err(),
        Some(PackError::Overflow {
            rows: 1 << 63,
            cols: 32
        })
    );
}

/// `m · cols` and `m · rows` both wrap to 0 for `m = 2^60`: empty buffers must still be
/// refused before the kernel writes through its pointers.
#[test]
#[should_panic(expected = "lhs is not m x cols")]
fn a_row_count_whose_sizes_wrap_is_refused() {
    let packed = PackedQ4_1::pack_portable(&[0; 16 * BLOCK_BYTES], 16, 32).unwrap();
    packed.matmul(&[], 1 << 60, &mut [], 1);
}

use half::f16;

use super::reference::dequantize_gguf;
use super::{BLOCK_BYTES, PackedQ5_K, SUPER};
use crate::isa::{Isa, kernels_here};
use crate::test_support::{Lcg, dense_matmul, max_relative_error, random_rows};
use crate::tiled::PackError;

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

#[test]
fn dequantized_rows_are_ggmls_dequantization_bit_for_bit() {
    let mut rng = Lcg(41);
    let (rows, cols) = (32, 512);
    let mut data = random_q5_k(&mut rng, rows, cols);
    // One super-block with extreme `d` and `dmin`, the largest finite f16.
    data[..2].copy_from_slice(&f16::MAX.to_le_bytes());
    data[2..4].copy_from_slice(&f16::MAX.to_le_bytes());
    let dense = dequantize_gguf(&data);
    let packed = PackedQ5_K::pack_portable(Isa::Avx2, &data, rows, cols).unwrap();
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
    let mut rng = Lcg(43);
    for (m, rows, cols) in [(1, 16, 256), (3, 32, 512), (5, 48, 1024)] {
        let data = random_q5_k(&mut rng, rows, cols);
        let dense = dequantize_gguf(&data);
        let lhs = random_rows(&mut rng, m, cols);
        let packed = PackedQ5_K::pack_portable(Isa::Avx2, &data, rows, cols).unwrap();
        let mut got = vec![0f32; m * rows];
        packed.matmul_reference(&lhs, m, &mut got);
        let want = dense_matmul(&lhs, &dense, m, rows, cols);
        let err = max_relative_error(&got, &want);
        assert!(err < 0.02, "{m}x{rows}x{cols}: relative error {err}");
    }
}

#[test]
fn the_kernel_matches_the_reference_for_every_row_remainder_and_thread_count() {
    let mut rng = Lcg(47);
    for (isa, (rows, cols)) in kernels_here()
        .into_iter()
        .flat_map(|isa| [(16, 256), (48, 512), (64, 1024)].map(|shape| (isa, shape)))
    {
        let data = random_q5_k(&mut rng, rows, cols);
        let packed = PackedQ5_K::pack_for(isa, &data, rows, cols).unwrap();
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
                    // Only the activation scale's f16 rounding separates the two.
                    assert!(
                        (got - want).abs() <= want.abs() * 1e-3,
                        "{isa:?} q {q}: {got} != {want}"
                    );
                }
            }
        }
    }
}

#[test]
fn shapes_and_lengths_that_do_not_pack_are_refused() {
    for (rows, cols) in [(8, 256), (16, 288), (16, 32), (0, 256)] {
        assert_eq!(
            PackedQ5_K::pack_portable(Isa::Avx2, &[], rows, cols).err(),
            Some(PackError::Shape { rows, cols })
        );
    }
    for len in [0, 16 * BLOCK_BYTES - 1, 16 * BLOCK_BYTES + 1] {
        assert!(matches!(
            PackedQ5_K::pack_portable(Isa::Avx2, &vec![0; len], 16, 256),
            Err(PackError::Length { want, .. }) if want == 16 * BLOCK_BYTES
        ));
    }
    // A crafted header's dimensions: `2^63 · 176` wraps to 0 in a release build.
    assert_eq!(
        PackedQ5_K::pack_portable(Isa::Avx2, &[], 1 << 63, 256).err(),
        Some(PackError::Overflow {
            rows: 1 << 63,
            cols: 256
        })
    );
}

/// `m · cols` and `m · rows` both wrap to 0 for `m = 2^60`: empty buffers must still be
/// refused before the kernel writes through its pointers.
#[test]
#[should_panic(expected = "lhs is not m x cols")]
fn a_row_count_whose_sizes_wrap_is_refused() {
    let packed = PackedQ5_K::pack_portable(Isa::Avx2, &[0; 16 * BLOCK_BYTES], 16, 256).unwrap();
    packed.matmul(&[], 1 << 60, &mut [], 1);
}

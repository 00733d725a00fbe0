use half::f16;

use super::reference::dequantize_gguf;
use super::{BLOCK_BYTES, PackedQ3_K, SUPER};
use crate::isa::kernels_here;
use crate::test_support::{Lcg, dense_matmul, max_relative_error, random_rows};
use crate::tiled::PackError;

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

#[test]
fn dequantized_rows_are_ggmls_dequantization_bit_for_bit() {
    let mut rng = Lcg(41);
    let (rows, cols) = (32, 512);
    let mut data = random_q3_k(&mut rng, rows, cols);
    // One super-block with the largest finite f16 `d`.
    data[BLOCK_BYTES - 2..BLOCK_BYTES].copy_from_slice(&f16::MAX.to_le_bytes());
    let dense = dequantize_gguf(&data);
    let packed = PackedQ3_K::pack_portable(&data, rows, cols).unwrap();
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
        let data = random_q3_k(&mut rng, rows, cols);
        let dense = dequantize_gguf(&data);
        let lhs = random_rows(&mut rng, m, cols);
        let packed = PackedQ3_K::pack_portable(&data, rows, cols).unwrap();
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
        let data = random_q3_k(&mut rng, rows, cols);
        let packed = PackedQ3_K::pack_for(isa, &data, rows, cols).unwrap();
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
                    // Only the activation scale's f16 rounding separates the two.
                    assert!((got - want).abs() <= want.abs() * 1e-3, "{got} != {want}");
                }
            }
        }
    }
}

#[test]
fn shapes_and_lengths_that_do_not_pack_are_refused() {
    for (rows, cols) in [(8, 256), (16, 288), (16, 32), (0, 256)] {
        assert_eq!(
            PackedQ3_K::pack_portable(&[], rows, cols).err(),
            Some(PackError::Shape { rows, cols })
        );
    }
    for len in [0, 16 * BLOCK_BYTES - 1, 16 * BLOCK_BYTES + 1] {
        assert!(matches!(
            PackedQ3_K::pack_portable(&vec![0; len], 16, 256),
            Err(PackError::Length { want, .. }) if want == 16 * BLOCK_BYTES
        ));
    }
    // A crafted header's dimensions: `2^63 · 110` wraps in a release build.
    assert_eq!(
        PackedQ3_K::pack_portable(&[], 1 << 63, 256).err(),
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
    let packed = PackedQ3_K::pack_portable(&[0; 16 * BLOCK_BYTES], 16, 256).unwrap();
    packed.matmul(&[], 1 << 60, &mut [], 1);
}

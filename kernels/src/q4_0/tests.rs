use crate::weight_arena::WeightArena;
use half::f16;

use super::{BLOCK, BLOCK_BYTES, PackedQ4_0, TILE_ROWS};
use crate::activations::{QuantizedRows, Scheme};
use crate::format_checks::{avx_vnni_products_are_avx2s, prompt_rows_match_rows_alone};
use crate::isa::{Isa, kernels_here};
use crate::test_support::{Lcg, dense_matmul, max_relative_error, random_rows};
use crate::tiled::PackError;

/// Random GGUF Q4_0 bytes for a `rows` × `cols` matrix, and the matrix they decode to.
fn random_q4_0(rng: &mut Lcg, rows: usize, cols: usize) -> (Vec<u8>, Vec<f32>) {
    let mut data = Vec::with_capacity(rows * cols / BLOCK * BLOCK_BYTES);
    let mut dense = Vec::with_capacity(rows * cols);
    for _ in 0..rows * cols / BLOCK {
        let scale = f16::from_f32(0.001 + rng.float().abs() * 0.02);
        data.extend_from_slice(&scale.to_le_bytes());
        let bytes: Vec<u8> = (0..BLOCK / 2).map(|_| (rng.next() % 256) as u8).collect();
        data.extend_from_slice(&bytes);
        let value = |nibble: u8| f32::from(i16::from(nibble) - 8) * scale.to_f32();
        dense.extend(bytes.iter().map(|b| value(b & 0x0f)));
        dense.extend(bytes.iter().map(|b| value(b >> 4)));
    }
    (data, dense)
}

impl PackedQ4_0 {
    /// What [`PackedQ4_0::matmul`] computes, one value at a time, from the packed bytes.
    fn matmul_reference(&self, lhs: &[f32], m: usize, out: &mut [f32]) {
        let acts = QuantizedRows::quantize(lhs, m, self.cols, 1, Scheme::Q8_0);
        let blocks = self.cols / BLOCK;
        for row in 0..self.rows {
            let (group, lane) = (row / TILE_ROWS, row % TILE_ROWS);
            for i in 0..m {
                let mut acc = 0f32;
                for block in 0..blocks {
                    let tile = &self.tiles[group * blocks + block];
                    let at = i * blocks + block;
                    let a = acts.values(at);
                    let mut sum = 0i32;
                    for j in 0..BLOCK / 2 {
                        let byte = tile.qs[(j / 4 * TILE_ROWS + lane) * 4 + j % 4];
                        sum += (i32::from(byte & 0x0f) - 8) * a[j];
                        sum += (i32::from(byte >> 4) - 8) * a[j + BLOCK / 2];
                    }
                    acc += sum as f32 * (tile.scales[lane].to_f32() * acts.scales[at]);
                }
                out[i * self.rows + row] = acc;
            }
        }
    }
}

#[test]
fn the_reference_agrees_with_dense_math_on_the_unpacked_weights() {
    let mut rng = Lcg(17);
    for (m, rows, cols) in [(1, 16, 32), (3, 32, 96), (5, 48, 896)] {
        let (data, dense) = random_q4_0(&mut rng, rows, cols);
        let lhs = random_rows(&mut rng, m, cols);
        let packed =
            PackedQ4_0::pack_portable(&WeightArena::one_run_each(), Isa::Avx2, &data, rows, cols)
                .unwrap();
        let mut got = vec![0f32; m * rows];
        packed.matmul_reference(&lhs, m, &mut got);
        let want = dense_matmul(&lhs, &dense, m, rows, cols);
        let err = max_relative_error(&got, &want);
        assert!(err < 0.02, "{m}x{rows}x{cols}: relative error {err}");
    }
}

#[test]
fn the_kernel_matches_the_reference_for_every_row_remainder_and_thread_count() {
    let mut rng = Lcg(19);
    for (isa, (rows, cols)) in kernels_here()
        .into_iter()
        .flat_map(|isa| [(16, 32), (48, 96), (64, 896), (32, 4864)].map(|shape| (isa, shape)))
    {
        let (data, _) = random_q4_0(&mut rng, rows, cols);
        let packed = PackedQ4_0::pack_for(isa, &data, rows, cols).unwrap();
        for m in [1, 2, 3, 4, 5, 7, 13, 40] {
            let lhs = random_rows(&mut rng, m, cols);
            let mut want = vec![0f32; m * rows];
            packed.matmul_reference(&lhs, m, &mut want);
            for threads in [1, 2, 3, 8] {
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
fn the_extreme_values_do_not_overflow_the_i16_sums() {
    for isa in kernels_here() {
        // Every nibble 15 (value 7) or 0 (value −8) against activations at ±127 after quantizing.
        for byte in [0xffu8, 0x00] {
            let (rows, cols) = (16, 64);
            let mut data = Vec::new();
            for _ in 0..rows * cols / BLOCK {
                data.extend_from_slice(&f16::from_f32(1.0).to_le_bytes());
                data.extend([byte; BLOCK / 2]);
            }
            let packed = PackedQ4_0::pack_for(isa, &data, rows, cols).unwrap();
            let lhs = vec![-1f32; cols];
            let mut out = vec![0f32; rows];
            packed.matmul(&lhs, 1, &mut out, 1);
            let value = if byte == 0xff { 7.0 } else { -8.0 };
            for got in out {
                // Only the activation scale's f16 rounding separates the two.
                let want = -value * cols as f32;
                assert!((got - want).abs() < want.abs() * 1e-3, "{got} != {want}");
            }
        }
    }
}

#[test]
fn dequantized_rows_are_the_unpacked_weights() {
    let mut rng = Lcg(23);
    let (rows, cols) = (32, 96);
    let (data, dense) = random_q4_0(&mut rng, rows, cols);
    let packed =
        PackedQ4_0::pack_portable(&WeightArena::one_run_each(), Isa::Avx2, &data, rows, cols)
            .unwrap();
    let mut row = vec![0f32; cols];
    for r in 0..rows {
        packed.dequantize_row(r, &mut row);
        assert_eq!(row, dense[r * cols..(r + 1) * cols]);
    }
}

#[test]
fn shapes_and_lengths_that_do_not_pack_are_refused() {
    assert_eq!(
        PackedQ4_0::pack_portable(
            &WeightArena::one_run_each(),
            Isa::Avx2,
            &[0; BLOCK_BYTES * 8],
            8,
            32
        )
        .err(),
        Some(PackError::Shape { rows: 8, cols: 32 })
    );
    assert!(matches!(
        PackedQ4_0::pack_portable(&WeightArena::one_run_each(), Isa::Avx2, &[0; 10], 16, 32),
        Err(PackError::Length { want, .. }) if want == 16 * BLOCK_BYTES
    ));
    // A crafted header's dimensions: `2^63 · 2 · 18` wraps to 0 in a release build.
    assert_eq!(
        PackedQ4_0::pack_portable(&WeightArena::one_run_each(), Isa::Avx2, &[], 1 << 63, 64).err(),
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
    let packed = PackedQ4_0::pack_portable(
        &WeightArena::one_run_each(),
        Isa::Avx2,
        &[0; 16 * BLOCK_BYTES],
        16,
        32,
    )
    .unwrap();
    packed.matmul(&[], 1 << 60, &mut Vec::new(), 1);
}

/// A prompt's rows come out as the same rows decoded, to the bit: on AVX-512, prompts go
/// through the Q8_0 kernel in runs of blocks (through tiles widened to bytes for Q4_0), and a
/// row's blocks must add in the same order.
#[test]
fn a_prompt_row_comes_out_as_the_same_row_decoded() {
    let mut rng = Lcg(59);
    for isa in kernels_here() {
        for shape in [(16, 32), (64, 896), (32, 4864)] {
            let (data, _) = random_q4_0(&mut rng, shape.0, shape.1);
            let packed = PackedQ4_0::pack_for(isa, &data, shape.0, shape.1).unwrap();
            let matmul = |lhs: &[f32], m: usize, out: &mut [f32]| packed.matmul(lhs, m, out, 2);
            prompt_rows_match_rows_alone(&mut rng, shape, matmul, &format!("{isa:?}"));
        }
    }
}

/// The AVX-VNNI kernel, its prompts through tiles widened to Q8_0's, gives the AVX2 kernel's
/// bits.
#[test]
fn the_avx_vnni_kernel_gives_the_avx2_kernels_bits() {
    let random = |rng: &mut Lcg, rows, cols| random_q4_0(rng, rows, cols).0;
    let product = |isa, data: &[u8], (rows, cols), lhs: &[f32], m| {
        let packed = PackedQ4_0::pack_for(isa, data, rows, cols).unwrap();
        let mut out = vec![f32::NAN; m * rows];
        packed.matmul(lhs, m, &mut out, 2);
        out
    };
    let shapes = [(16, 32), (64, 896), (32, 4864)];
    avx_vnni_products_are_avx2s(&mut Lcg(71), &shapes, random, product);
}

use crate::weight_arena::WeightArena;
use half::f16;

use super::{BLOCK, BLOCK_BYTES, Isa, PackError, PackedQ8_0};
use crate::format_checks::{avx_vnni_products_are_avx2s, prompt_rows_match_rows_alone};
use crate::isa::kernels_here;
use crate::test_support::{Lcg, dense_matmul, max_relative_error, random_rows};

/// Random GGUF Q8_0 bytes for a `rows` × `cols` matrix, and the matrix they decode to.
fn random_q8_0(rng: &mut Lcg, rows: usize, cols: usize) -> (Vec<u8>, Vec<f32>) {
    let mut data = Vec::with_capacity(rows * cols / BLOCK * BLOCK_BYTES);
    let mut dense = Vec::with_capacity(rows * cols);
    for _ in 0..rows * cols / BLOCK {
        let scale = f16::from_f32(0.001 + rng.float().abs() * 0.02);
        data.extend_from_slice(&scale.to_le_bytes());
        for _ in 0..BLOCK {
            // The full range, -128 included, which ggml's quantizer never writes but a file may.
            let q = (rng.next() % 256) as u8;
            data.push(q);
            dense.push(f32::from(q as i8) * scale.to_f32());
        }
    }
    (data, dense)
}

#[test]
fn the_reference_agrees_with_dense_math_on_the_unpacked_weights() {
    let mut rng = Lcg(7);
    for (m, rows, cols) in [(1, 16, 32), (3, 32, 96), (5, 48, 896)] {
        let (data, dense) = random_q8_0(&mut rng, rows, cols);
        let lhs = random_rows(&mut rng, m, cols);
        let packed =
            PackedQ8_0::pack_portable(&WeightArena::one_run_each(), Isa::Avx2, &data, rows, cols)
                .unwrap();
        let mut got = vec![0f32; m * rows];
        packed.matmul_reference(&lhs, m, &mut got);
        let want = dense_matmul(&lhs, &dense, m, rows, cols);
        // Only the activations' 8-bit quantization separates the two.
        let err = max_relative_error(&got, &want);
        assert!(err < 0.02, "{m}x{rows}x{cols}: relative error {err}");
    }
}

#[test]
fn every_simd_kernel_matches_the_reference_for_every_row_remainder_and_thread_count() {
    let mut rng = Lcg(11);
    for (isa, (rows, cols)) in kernels_here()
        .into_iter()
        // The last: rows so long that 40 activation rows come in three slices (16 a slice),
        // and ten groups of 70 KB that threads take in blocks of three (`tiled::run`).
        .flat_map(|isa| [(16, 32), (48, 96), (64, 896), (160, 4096)].map(|shape| (isa, shape)))
    {
        let (data, _) = random_q8_0(&mut rng, rows, cols);
        let packed = PackedQ8_0::pack_for(isa, &data, rows, cols).unwrap();
        for m in [1, 2, 3, 4, 5, 6, 7, 11, 12, 13, 40] {
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
fn zero_rows_of_input_write_nothing_and_zero_blocks_give_zero() {
    let mut rng = Lcg(3);
    let (data, _) = random_q8_0(&mut rng, 16, 64);
    for isa in kernels_here() {
        let packed = PackedQ8_0::pack_for(isa, &data, 16, 64).unwrap();
        packed.matmul(&[], 0, &mut Vec::new(), 2);
        let mut out = vec![f32::NAN; 16];
        packed.matmul(&[0.0; 64], 1, &mut out, 2);
        assert!(out.iter().all(|&x| x == 0.0), "{isa:?}: {out:?}");
    }
}

#[test]
fn shapes_and_lengths_that_do_not_pack_are_refused() {
    let data = vec![0u8; 16 * BLOCK_BYTES];
    assert_eq!(
        PackedQ8_0::pack_portable(&WeightArena::one_run_each(), Isa::Avx2, &data, 8, 64).err(),
        Some(PackError::Shape { rows: 8, cols: 64 })
    );
    assert_eq!(
        PackedQ8_0::pack_portable(&WeightArena::one_run_each(), Isa::Avx2, &data, 16, 40).err(),
        Some(PackError::Shape { rows: 16, cols: 40 })
    );
    assert_eq!(
        PackedQ8_0::pack_portable(&WeightArena::one_run_each(), Isa::Avx2, &data, 16, 64).err(),
        Some(PackError::Length {
            rows: 16,
            cols: 64,
            got: 16 * BLOCK_BYTES,
            want: 32 * BLOCK_BYTES
        })
    );
    assert!(
        PackedQ8_0::pack_portable(&WeightArena::one_run_each(), Isa::Avx2, &data, 16, 32).is_ok()
    );
    // A crafted header's dimensions: `2^63 · 2 · 34` wraps to 0 in a release build.
    assert_eq!(
        PackedQ8_0::pack_portable(&WeightArena::one_run_each(), Isa::Avx2, &[], 1 << 63, 64).err(),
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
    let data = vec![0u8; 16 * BLOCK_BYTES];
    let packed =
        PackedQ8_0::pack_portable(&WeightArena::one_run_each(), Isa::Avx2, &data, 16, 32).unwrap();
    packed.matmul(&[], 1 << 60, &mut Vec::new(), 1);
}

#[test]
fn dequantized_rows_are_the_unpacked_weights() {
    let mut rng = Lcg(13);
    let (rows, cols) = (48, 96);
    let (data, dense) = random_q8_0(&mut rng, rows, cols);
    let packed =
        PackedQ8_0::pack_portable(&WeightArena::one_run_each(), Isa::Avx2, &data, rows, cols)
            .unwrap();
    let mut row = vec![f32::NAN; cols];
    for r in [0, 1, 15, 16, 47] {
        packed.dequantize_row(r, &mut row);
        assert_eq!(row, dense[r * cols..(r + 1) * cols], "row {r}");
    }
}

/// A prompt's rows come out as the same rows decoded, to the bit: on AVX-512 the Q8_0 kernel
/// also multiplies the Q5_0 and Q4_0 prompts' widened tiles, in runs of blocks (`widened`),
/// and its own rows must not depend on the rows beside them.
#[test]
fn a_prompt_row_comes_out_as_the_same_row_decoded() {
    let mut rng = Lcg(61);
    for isa in kernels_here() {
        for shape in [(16, 32), (64, 896), (32, 4864)] {
            let (data, _) = random_q8_0(&mut rng, shape.0, shape.1);
            let packed = PackedQ8_0::pack_for(isa, &data, shape.0, shape.1).unwrap();
            let matmul = |lhs: &[f32], m: usize, out: &mut [f32]| packed.matmul(lhs, m, out, 2);
            prompt_rows_match_rows_alone(&mut rng, shape, matmul, &format!("{isa:?}"));
        }
    }
}

/// The AVX-VNNI kernel, its weights offset by 128 as for AVX-512, gives the AVX2 kernel's bits.
#[test]
fn the_avx_vnni_kernel_gives_the_avx2_kernels_bits() {
    let random = |rng: &mut Lcg, rows, cols| random_q8_0(rng, rows, cols).0;
    let product = |isa, data: &[u8], (rows, cols), lhs: &[f32], m| {
        let packed = PackedQ8_0::pack_for(isa, data, rows, cols).unwrap();
        let mut out = vec![f32::NAN; m * rows];
        packed.matmul(lhs, m, &mut out, 2);
        out
    };
    let shapes = [(16, 32), (64, 896), (32, 4864)];
    avx_vnni_products_are_avx2s(&mut Lcg(67), &shapes, random, product);
}

//! The checks every packed format's tests run, each on the format's own data and scalar
//! references: the packing against ggml's dequantization, the reference product against
//! dense math, every SIMD kernel against the reference, and the layouts packing must refuse.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::isa::{Isa, kernels_here};
use crate::test_support::{Lcg, dense_matmul, max_relative_error, random_rows};
use crate::tiled::PackError;

/// What the checks need of a packed format (its tests implement it from its inherent
/// methods and references).
pub(crate) trait Format: Sized {
    /// Values and GGUF bytes per block (a super-block for the K-quants).
    const BLOCK: (usize, usize);
    /// Random GGUF bytes for a `rows` × `cols` matrix, scales finite and small.
    fn random(rng: &mut Lcg, rows: usize, cols: usize) -> Vec<u8>;
    /// ggml's dequantization of GGUF bytes, written from its loops.
    fn dequantize_gguf(data: &[u8]) -> Vec<f32>;
    /// The layout `isa`'s kernel reads, packed on any CPU.
    fn pack_portable(isa: Isa, data: &[u8], rows: usize, cols: usize) -> Result<Self, PackError>;
    fn pack_for(isa: Isa, data: &[u8], rows: usize, cols: usize) -> Result<Self, PackError>;
    fn dequantize_row(&self, row: usize, out: &mut [f32]);
    fn matmul(&self, lhs: &[f32], m: usize, out: &mut [f32], threads: usize);
    /// What `matmul` computes, one value at a time from the packed tiles.
    fn matmul_reference(&self, lhs: &[f32], m: usize, out: &mut [f32]);
}

/// Every packed row dequantizes to ggml's values for `data`, bit for bit (an embedding lookup
/// in a tied table must read what candle would), in each kernel's layout, on any CPU.
pub(crate) fn rows_are_the_gguf_decode_bit_for_bit<F: Format>(
    data: &[u8],
    rows: usize,
    cols: usize,
) {
    let dense = F::dequantize_gguf(data);
    for isa in Isa::ALL {
        let packed = F::pack_portable(isa, data, rows, cols).unwrap();
        let mut row = vec![0f32; cols];
        for r in 0..rows {
            packed.dequantize_row(r, &mut row);
            let want = &dense[r * cols..(r + 1) * cols];
            let same = row
                .iter()
                .zip(want)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{isa:?} row {r}");
        }
    }
}

/// The reference product is the dense product of the decoded weights, up to the activations'
/// 8-bit quantization, for each `(m, rows, cols)`. The bound allows for the K-quants' one
/// activation scale per 256 values (ggml's Q8_K), a coarser step than one per 32: Q3_K's
/// reference came to 2.1% of the largest output on these rows, the others to less. Each
/// kernel's layout is checked, on any CPU.
pub(crate) fn the_reference_is_dense_math<F: Format>(seed: u64, shapes: &[(usize, usize, usize)]) {
    let mut rng = Lcg(seed);
    for &(m, rows, cols) in shapes {
        let data = F::random(&mut rng, rows, cols);
        let dense = F::dequantize_gguf(&data);
        let lhs = random_rows(&mut rng, m, cols);
        let want = dense_matmul(&lhs, &dense, m, rows, cols);
        for isa in Isa::ALL {
            let packed = F::pack_portable(isa, &data, rows, cols).unwrap();
            let mut got = vec![0f32; m * rows];
            packed.matmul_reference(&lhs, m, &mut got);
            let err = max_relative_error(&got, &want);
            assert!(
                err < 0.03,
                "{isa:?} {m}x{rows}x{cols}: relative error {err}"
            );
        }
    }
}

/// Every kernel this CPU runs computes what the reference does, for activation row counts
/// that leave every remainder of the kernels' row steps (of six rows, or four where a pair
/// kernel takes two row groups), on 1 to 8 threads.
pub(crate) fn the_kernels_match_the_reference<F: Format>(seed: u64, shapes: &[(usize, usize)]) {
    let mut rng = Lcg(seed);
    for isa in kernels_here() {
        for &(rows, cols) in shapes {
            let data = F::random(&mut rng, rows, cols);
            let Some(packed) = packed_here::<F>(isa, &data, rows, cols) else {
                return;
            };
            for m in [1, 2, 3, 4, 5, 6, 7, 10, 11, 13, 16, 33] {
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
}

/// `data` packed for `isa`'s kernel, or `None` where this CPU lacks a feature it needs (said
/// on stderr, and the caller's check ends there); any other refusal fails the test.
fn packed_here<F: Format>(isa: Isa, data: &[u8], rows: usize, cols: usize) -> Option<F> {
    match F::pack_for(isa, data, rows, cols) {
        Ok(packed) => Some(packed),
        Err(PackError::Unsupported) => {
            eprintln!("{isa:?}: this CPU lacks a feature the kernel needs");
            None
        }
        Err(err) => panic!("{rows}x{cols}: {err}"),
    }
}

/// Every kernel this CPU runs gives a row of a prompt the bits it gives that row alone: a row's
/// sums do not depend on the rows beside it, however a call takes them (a Q5_0 or Q4_0 prompt
/// goes through widened tiles on AVX-512, a decoded row through the format's own kernel).
pub(crate) fn prompt_rows_are_decoded_rows<F: Format>(seed: u64, shapes: &[(usize, usize)]) {
    let mut rng = Lcg(seed);
    for isa in kernels_here() {
        for &(rows, cols) in shapes {
            let data = F::random(&mut rng, rows, cols);
            let Some(packed) = packed_here::<F>(isa, &data, rows, cols) else {
                return;
            };
            let matmul = |lhs: &[f32], m: usize, out: &mut [f32]| packed.matmul(lhs, m, out, 2);
            prompt_rows_match_rows_alone(&mut rng, (rows, cols), matmul, &format!("{isa:?}"));
        }
    }
}

/// Where this CPU has AVX-VNNI, its kernels give AVX2's bits, for decoded rows and a prompt's:
/// their integer sums are exact either way and their float steps the same, so a file answers
/// the same on a CPU of either kind.
pub(crate) fn avx_vnni_gives_avx2_bits<F: Format>(seed: u64, shapes: &[(usize, usize)]) {
    let product = |isa, data: &[u8], (rows, cols), lhs: &[f32], m| {
        let packed = F::pack_for(isa, data, rows, cols).unwrap();
        let mut out = vec![f32::NAN; m * rows];
        packed.matmul(lhs, m, &mut out, 2);
        out
    };
    avx_vnni_products_are_avx2s(&mut Lcg(seed), shapes, F::random, product);
}

/// [`avx_vnni_gives_avx2_bits`] for a format's own `random` GGUF bytes and `product` (packed
/// for an instruction set, times `m` activation rows).
pub(crate) fn avx_vnni_products_are_avx2s(
    rng: &mut Lcg,
    shapes: &[(usize, usize)],
    random: impl Fn(&mut Lcg, usize, usize) -> Vec<u8>,
    product: impl Fn(Isa, &[u8], (usize, usize), &[f32], usize) -> Vec<f32>,
) {
    if !Isa::AvxVnni.available() {
        eprintln!("this CPU has no AVX-VNNI: its kernels are not compared with AVX2's");
        return;
    }
    for &(rows, cols) in shapes {
        let data = random(rng, rows, cols);
        for m in [1, 3, 4, 5, 33] {
            let lhs = random_rows(rng, m, cols);
            let got = product(Isa::AvxVnni, &data, (rows, cols), &lhs, m);
            let want = product(Isa::Avx2, &data, (rows, cols), &lhs, m);
            let same = got
                .iter()
                .zip(&want)
                .all(|(g, w)| g.to_bits() == w.to_bits());
            assert!(same, "{m}x{rows}x{cols}: AVX-VNNI and AVX2 differ");
        }
    }
}

/// A prompt of 33 random rows through `matmul` (`(lhs, m, out)` for a `rows` × `cols` matrix)
/// gives each row the bits it gets alone.
pub(crate) fn prompt_rows_match_rows_alone(
    rng: &mut Lcg,
    (rows, cols): (usize, usize),
    matmul: impl Fn(&[f32], usize, &mut [f32]),
    what: &str,
) {
    let m = 33;
    let lhs = random_rows(rng, m, cols);
    let mut prompt = vec![f32::NAN; m * rows];
    matmul(&lhs, m, &mut prompt);
    for (row, prompt) in prompt.chunks_exact(rows).enumerate() {
        let mut alone = vec![f32::NAN; rows];
        matmul(&lhs[row * cols..][..cols], 1, &mut alone);
        let same = prompt
            .iter()
            .zip(&alone)
            .all(|(p, a)| p.to_bits() == a.to_bits());
        assert!(same, "{what} {rows}x{cols}, row {row} of {m}");
    }
}

/// Packing refuses shapes that do not tile, data of the wrong length and dimensions whose
/// byte size overflows (a crafted header's); a matmul refuses a row count whose buffer sizes
/// wrap to 0, before its kernel writes through raw pointers.
pub(crate) fn bad_layouts_are_refused<F: Format>() {
    let (values, bytes) = F::BLOCK;
    for (rows, cols) in [
        (8, values),
        (16, values + 16),
        (16, values / 8),
        (0, values),
        (16, 0),
    ] {
        assert_eq!(
            F::pack_portable(Isa::Avx2, &[], rows, cols).err(),
            Some(PackError::Shape { rows, cols }),
            "{rows}x{cols}"
        );
    }
    for len in [0, 16 * bytes - 1, 16 * bytes + 1] {
        assert!(matches!(
            F::pack_portable(Isa::Avx2, &vec![0; len], 16, values),
            Err(PackError::Length { want, .. }) if want == 16 * bytes
        ));
    }
    assert_eq!(
        F::pack_portable(Isa::Avx2, &[], 1 << 63, values).err(),
        Some(PackError::Overflow {
            rows: 1 << 63,
            cols: values
        })
    );
    let packed = F::pack_portable(Isa::Avx2, &vec![0; 16 * bytes], 16, values).unwrap();
    let wrapped = catch_unwind(AssertUnwindSafe(|| packed.matmul(&[], 1 << 60, &mut [], 1)));
    let message = wrapped.expect_err("a wrapping row count must panic");
    let message = message
        .downcast_ref::<String>()
        .map(String::as_str)
        .unwrap_or_default();
    assert!(message.contains("lhs is not m x cols"), "{message}");
}

/// Implements [`Format`] for a packed type from its inherent methods, and writes the four
/// shared tests for it:
/// - `rows`: `(data, rows, cols)` whose packed rows must decode as ggml does;
/// - `dense`: `(m, rows, cols)` products for the reference against dense math;
/// - `kernels`: `(rows, cols)` shapes for the kernels against the reference.
macro_rules! packed_format_tests {
    (
        $ty:ty,
        block: $block:expr,
        random: $random:path,
        decode: $decode:path,
        portable: |$isa:ident, $data:ident, $rows:ident, $cols:ident| $portable:expr,
        rows: $rows_case:expr,
        dense: $dense:expr,
        kernels: $kernels:expr $(,)?
    ) => {
        impl $crate::format_checks::Format for $ty {
            const BLOCK: (usize, usize) = $block;
            fn random(rng: &mut $crate::test_support::Lcg, rows: usize, cols: usize) -> Vec<u8> {
                $random(rng, rows, cols)
            }
            fn dequantize_gguf(data: &[u8]) -> Vec<f32> {
                $decode(data)
            }
            fn pack_portable(
                $isa: $crate::isa::Isa,
                $data: &[u8],
                $rows: usize,
                $cols: usize,
            ) -> Result<Self, $crate::tiled::PackError> {
                $portable
            }
            fn pack_for(
                isa: $crate::isa::Isa,
                data: &[u8],
                rows: usize,
                cols: usize,
            ) -> Result<Self, $crate::tiled::PackError> {
                <$ty>::pack_for(isa, data, rows, cols)
            }
            fn dequantize_row(&self, row: usize, out: &mut [f32]) {
                <$ty>::dequantize_row(self, row, out)
            }
            fn matmul(&self, lhs: &[f32], m: usize, out: &mut [f32], threads: usize) {
                <$ty>::matmul(self, lhs, m, out, threads)
            }
            fn matmul_reference(&self, lhs: &[f32], m: usize, out: &mut [f32]) {
                <$ty>::matmul_reference(self, lhs, m, out)
            }
        }

        #[test]
        fn dequantized_rows_are_ggmls_dequantization_bit_for_bit() {
            let (data, rows, cols): (Vec<u8>, usize, usize) = $rows_case;
            $crate::format_checks::rows_are_the_gguf_decode_bit_for_bit::<$ty>(&data, rows, cols);
        }

        #[test]
        fn the_reference_agrees_with_dense_math_on_the_unpacked_weights() {
            $crate::format_checks::the_reference_is_dense_math::<$ty>(43, &$dense);
        }

        #[test]
        fn the_kernels_match_the_reference_for_every_row_remainder_and_thread_count() {
            $crate::format_checks::the_kernels_match_the_reference::<$ty>(47, &$kernels);
        }

        #[test]
        fn the_avx_vnni_kernel_gives_the_avx2_kernels_bits() {
            $crate::format_checks::avx_vnni_gives_avx2_bits::<$ty>(53, &$kernels);
        }

        #[test]
        fn a_prompt_row_comes_out_as_the_same_row_decoded() {
            $crate::format_checks::prompt_rows_are_decoded_rows::<$ty>(53, &$kernels);
        }

        #[test]
        fn shapes_lengths_and_sizes_that_do_not_pack_are_refused() {
            $crate::format_checks::bad_layouts_are_refused::<$ty>();
        }
    };
}
pub(crate) use packed_format_tests;

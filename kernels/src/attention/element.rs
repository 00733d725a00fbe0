//! The two types a KV cache may hold: f32, and f16 at half the bytes.
//!
//! Decoding at depth reads every cached key and value once per token, and that read is what
//! bounds decode attention (two cores moved 4 MiB per layer at 4k tokens in f32, at the speed
//! of memory, not of the multiply-adds). In f16 the same keys are half the bytes, and widening
//! eight of them is one instruction (`vcvtph2ps`, F16C, on every CPU with AVX2). llama.cpp
//! keeps its cache in f16 by default for the same reason.

use half::f16;

use super::aligned::lines_in;

/// How the kernels read an element: a closed set, so that the SIMD loads can
/// match on it at compile time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    F32,
    F16,
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for half::f16 {}
}

/// An element of a KV cache that [`crate::causal_attention`] reads: `f32` or `half::f16`.
/// Sealed: the kernels' raw loads rely on knowing its layout.
pub trait KvElement: sealed::Sealed + Copy + Send + Sync + 'static {
    #[doc(hidden)]
    const KIND: Kind;

    /// The value as f32.
    #[doc(hidden)]
    fn widen(self) -> f32;

    /// `src` as f32: itself for f32, else widened into `scratch`.
    #[doc(hidden)]
    fn as_f32<'a>(src: &'a [Self], scratch: &'a mut Vec<f32>) -> &'a [f32];
}

impl KvElement for f32 {
    const KIND: Kind = Kind::F32;

    #[inline(always)]
    fn widen(self) -> f32 {
        self
    }

    #[inline(always)]
    fn as_f32<'a>(src: &'a [f32], _: &'a mut Vec<f32>) -> &'a [f32] {
        src
    }
}

impl KvElement for f16 {
    const KIND: Kind = Kind::F16;

    #[inline(always)]
    fn widen(self) -> f32 {
        self.to_f32()
    }

    /// The widened block starts on a cache line of `scratch`, so that the kernels' loads from
    /// it do not span two lines (`aligned.rs` has the figures).
    fn as_f32<'a>(src: &'a [f16], scratch: &'a mut Vec<f32>) -> &'a [f32] {
        use half::slice::HalfFloatSliceExt;
        let start = lines_in(scratch, src.len());
        let wide = &mut scratch[start..][..src.len()];
        // With `std`, half picks F16C at run time where the CPU has it.
        src.convert_to_f32_slice(wide);
        wide
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_widened_block_starts_on_a_cache_line_and_holds_the_values() {
        let src: Vec<f16> = (0..777)
            .map(|i| f16::from_f32(i as f32 * 0.25 - 90.0))
            .collect();
        let mut scratch = Vec::new();
        // Lengths that shrink and grow the scratch, as a cache's last block does.
        for len in [777, 64, 1, 500, 777] {
            let wide = f16::as_f32(&src[..len], &mut scratch);
            assert_eq!(wide.as_ptr() as usize % 64, 0, "length {len}");
            let expected: Vec<f32> = src[..len].iter().map(|x| x.to_f32()).collect();
            assert_eq!(wide, &expected[..], "length {len}");
        }
    }
}

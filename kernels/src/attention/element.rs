//! The two types a KV cache may hold: f32, and f16 at half the bytes.
//!
//! Decoding at depth reads every cached key and value once per token, and that read is what
//! bounds decode attention (two cores moved 4 MiB per layer at 4k tokens in f32, at the speed
//! of memory, not of the multiply-adds). In f16 the same keys are half the bytes, and widening
//! eight of them is one instruction (`vcvtph2ps`, F16C, on every CPU with AVX2). llama.cpp
//! keeps its cache in f16 by default for the same reason.

use half::f16;

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

    fn as_f32<'a>(src: &'a [f16], scratch: &'a mut Vec<f32>) -> &'a [f32] {
        use half::slice::HalfFloatSliceExt;
        scratch.resize(src.len(), 0.0);
        // With `std`, half picks F16C at run time where the CPU has it.
        src.convert_to_f32_slice(scratch);
        scratch
    }
}

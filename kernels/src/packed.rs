//! [`PackedMatrix`]: what every packed format offers, for callers that hold one of several
//! (the engine's linear layers) and would otherwise match on the format at every call.

use crate::Isa;

/// A weight matrix packed for one of this crate's kernels, whatever its format.
pub trait PackedMatrix: Send + Sync {
    /// The format's name as ggml spells it (`Q4_K`).
    fn format(&self) -> &'static str;
    /// The kernel the matrix runs on.
    fn isa(&self) -> Isa;
    /// Output width (rows of the weight).
    fn rows(&self) -> usize;
    /// Input width (columns of the weight).
    fn cols(&self) -> usize;
    /// Row `row` of the weight, dequantized into `out` (`cols` long).
    ///
    /// # Panics
    /// If `row` is out of range or `out` is not `cols` long.
    fn dequantize_row(&self, row: usize, out: &mut [f32]);
    /// `out = lhs · Wᵀ` for `m` rows of `lhs` (`m × cols`) into `out` (`m × rows`).
    ///
    /// # Panics
    /// If `lhs` or `out` do not have those sizes.
    fn matmul(&self, lhs: &[f32], m: usize, out: &mut [f32], threads: usize);
}

/// Implements [`PackedMatrix`] for packed types by their inherent methods of the same names.
macro_rules! packed_matrix {
    ($($ty:ty => $name:literal),* $(,)?) => {$(
        impl PackedMatrix for $ty {
            fn format(&self) -> &'static str {
                $name
            }
            fn isa(&self) -> Isa {
                <$ty>::isa(self)
            }
            fn rows(&self) -> usize {
                <$ty>::rows(self)
            }
            fn cols(&self) -> usize {
                <$ty>::cols(self)
            }
            fn dequantize_row(&self, row: usize, out: &mut [f32]) {
                <$ty>::dequantize_row(self, row, out)
            }
            fn matmul(&self, lhs: &[f32], m: usize, out: &mut [f32], threads: usize) {
                <$ty>::matmul(self, lhs, m, out, threads)
            }
        }
    )*};
}

packed_matrix!(
    crate::PackedQ8_0 => "Q8_0",
    crate::PackedQ4_0 => "Q4_0",
    crate::PackedQ4_1 => "Q4_1",
    crate::PackedQ5_0 => "Q5_0",
    crate::PackedQ5_1 => "Q5_1",
    crate::PackedQ2_K => "Q2_K",
    crate::PackedQ3_K => "Q3_K",
    crate::PackedQ4_K => "Q4_K",
    crate::PackedQ5_K => "Q5_K",
    crate::PackedQ6_K => "Q6_K",
);

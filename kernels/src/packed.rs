//! [`PackedMatrix`]: what every packed format offers, for callers that hold one of several
//! (the engine's linear layers) and would otherwise match on the format at every call.

use std::marker::PhantomData;
use std::mem::MaybeUninit;

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
    /// [`matmul`](Self::matmul) into memory not yet written, such as a fresh vector's spare
    /// capacity: every element of `out` is written, so a caller may take all of it as
    /// initialized afterwards, without zeroing it first (a prompt chunk's gate/up output is
    /// 10 MB).
    ///
    /// # Panics
    /// As for [`matmul`](Self::matmul).
    fn matmul_uninit(&self, lhs: &[f32], m: usize, out: &mut [MaybeUninit<f32>], threads: usize);
}

/// A matmul's output, written whole whether or not it held values before.
pub struct MatmulOut<'a> {
    start: *mut f32,
    len: usize,
    _borrow: PhantomData<&'a mut [MaybeUninit<f32>]>,
}

impl MatmulOut<'_> {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn as_mut_ptr(&mut self) -> *mut f32 {
        self.start
    }
}

impl<'a> From<&'a mut [f32]> for MatmulOut<'a> {
    fn from(out: &'a mut [f32]) -> Self {
        Self {
            start: out.as_mut_ptr(),
            len: out.len(),
            _borrow: PhantomData,
        }
    }
}

impl<'a> From<&'a mut Vec<f32>> for MatmulOut<'a> {
    fn from(out: &'a mut Vec<f32>) -> Self {
        out.as_mut_slice().into()
    }
}

impl<'a> From<&'a mut [MaybeUninit<f32>]> for MatmulOut<'a> {
    fn from(out: &'a mut [MaybeUninit<f32>]) -> Self {
        Self {
            start: out.as_mut_ptr().cast(),
            len: out.len(),
            _borrow: PhantomData,
        }
    }
}

/// The constructors and accessors every packed format has, around its own `pack_portable`
/// (the layout alone, which the tests check on any CPU). Invoked in each format's module, where
/// its struct's `isa`, `rows` and `cols` fields and `pack_portable` are visible.
macro_rules! packed_basics {
    ($ty:ident, $name:literal) => {
        impl $ty {
            /// Whether this CPU runs a packed kernel (AVX-512 VNNI, or AVX2 and FMA). Without
            /// it, callers keep their ordinary path.
            pub fn supported() -> bool {
                $crate::Isa::detect().is_some()
            }

            #[doc = concat!("Repacks GGUF ", $name, " `data` holding a `rows` × `cols` matrix")]
            /// for the fastest kernel this CPU has.
            pub fn pack(data: &[u8], rows: usize, cols: usize) -> Result<Self, $crate::PackError> {
                let isa = $crate::Isa::detect().ok_or($crate::PackError::Unsupported)?;
                Self::pack_for(isa, data, rows, cols)
            }

            /// [`Self::pack`] for a given kernel (tests run every kernel the CPU has), in
            /// memory of the matrix's own.
            pub fn pack_for(
                isa: $crate::Isa,
                data: &[u8],
                rows: usize,
                cols: usize,
            ) -> Result<Self, $crate::PackError> {
                Self::pack_in(&$crate::WeightArena::one_run_each(), isa, data, rows, cols)
            }

            /// [`Self::pack_for`] into `arena`, beside the other matrices packed there.
            pub fn pack_in(
                arena: &$crate::WeightArena,
                isa: $crate::Isa,
                data: &[u8],
                rows: usize,
                cols: usize,
            ) -> Result<Self, $crate::PackError> {
                if !isa.available() {
                    return Err($crate::PackError::Unsupported);
                }
                Self::pack_portable(arena, isa, data, rows, cols)
            }

            /// The kernel this matrix runs on.
            pub fn isa(&self) -> $crate::Isa {
                self.isa
            }

            /// Output width (rows of the weight).
            pub fn rows(&self) -> usize {
                self.rows
            }

            /// Input width (columns of the weight).
            pub fn cols(&self) -> usize {
                self.cols
            }
        }
    };
}
pub(crate) use packed_basics;

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
            fn matmul_uninit(
                &self,
                lhs: &[f32],
                m: usize,
                out: &mut [MaybeUninit<f32>],
                threads: usize,
            ) {
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

#[cfg(test)]
mod tests {
    use super::PackedMatrix;
    use crate::isa::kernels_here;
    use crate::test_support::{Lcg, random_rows};

    /// Into a fresh vector's spare capacity, the product is the one `matmul` writes over
    /// values, bit for bit, on one thread and several, for a decoded row and a prompt's rows.
    #[test]
    fn a_product_into_unwritten_memory_is_the_same_product() {
        let mut rng = Lcg(5);
        let (rows, cols) = (48, 4096);
        // Q8_0 blocks: an f16 scale of 1/64, then 32 bytes.
        let data: Vec<u8> = (0..rows * cols / 32)
            .flat_map(|_| {
                let mut block = vec![0x00, 0x24];
                block.extend((0..32).map(|_| rng.next() as u8));
                block
            })
            .collect();
        for isa in kernels_here() {
            let packed: Box<dyn PackedMatrix> =
                Box::new(crate::PackedQ8_0::pack_for(isa, &data, rows, cols).unwrap());
            for (m, threads) in [(1, 1), (1, 2), (37, 3)] {
                let lhs = random_rows(&mut rng, m, cols);
                let mut want = vec![f32::NAN; m * rows];
                packed.matmul(&lhs, m, &mut want, threads);
                let mut got: Vec<f32> = Vec::with_capacity(m * rows);
                packed.matmul_uninit(&lhs, m, &mut got.spare_capacity_mut()[..m * rows], threads);
                // SAFETY: `matmul_uninit` writes every element of its output.
                unsafe { got.set_len(m * rows) };
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert!(
                    bits(&got) == bits(&want),
                    "{isa:?}, {m} rows, {threads} threads"
                );
                assert!(want.iter().all(|v| v.is_finite()));
            }
        }
    }
}

//! What every format's AVX2 kernel has around its arithmetic: the entry point the tiled matmul
//! calls for one row group, which takes the activation rows `MR` at a time and then one by
//! one, and the store of the accumulated rows.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{__m256, _mm256_storeu_ps};

/// Writes a format's AVX2 `group` for its tile type `$tile`, one tile per `$blocks` activation
/// blocks: it calls the module's micro-kernel `rows::<MR>` for as many whole steps of its
/// `MR` rows as fit, then `rows::<1>` for each row left.
macro_rules! avx2_group {
    ($tile:ty, $blocks:expr) => {
        /// Writes the 16 columns of one row group for activation rows `rows`.
        ///
        /// # Safety
        /// The CPU has what the format's `pack_for` checked for this kernel; `out` is valid for
        /// writes of `rows.end` rows × `stride` f32 from the start of the output; `tiles` holds
        /// the group's tiles.
        #[cfg(target_arch = "x86_64")]
        pub(super) unsafe fn group(
            tiles: &[$tile],
            acts: &$crate::activations::QuantizedRows,
            rows: ::std::ops::Range<usize>,
            out: *mut f32,
            stride: usize,
        ) {
            debug_assert_eq!(tiles.len() * $blocks, acts.blocks);
            let mut first = rows.start;
            // SAFETY (both calls): forwarded from the caller; each call covers rows
            // `first..first + R`.
            while first + MR <= rows.end {
                unsafe { self::rows::<MR>(tiles, acts, first, out, stride) };
                first += MR;
            }
            while first < rows.end {
                unsafe { self::rows::<1>(tiles, acts, first, out, stride) };
                first += 1;
            }
        }

        #[cfg(not(target_arch = "x86_64"))]
        pub(super) unsafe fn group(
            _: &[$tile],
            _: &$crate::activations::QuantizedRows,
            _: ::std::ops::Range<usize>,
            _: *mut f32,
            _: usize,
        ) {
            unreachable!("the packed kernel is only built on x86_64, and `pack` refuses elsewhere")
        }
    };
}
pub(crate) use avx2_group;

/// Stores a micro-kernel's `R` rows of 16 accumulated columns (two registers each), row `r` at
/// `out + (first + r) · stride`.
///
/// # Safety
/// Rows `first..first + R` are the caller's to write, 16 columns each from `out`.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx")]
pub(crate) unsafe fn store_rows<const R: usize>(
    acc: &[[__m256; 2]; R],
    out: *mut f32,
    first: usize,
    stride: usize,
) {
    for (r, acc) in acc.iter().enumerate() {
        // SAFETY: row `first + r` is one of the caller's rows; 16 columns from `out`.
        unsafe {
            let row = out.add((first + r) * stride);
            _mm256_storeu_ps(row, acc[0]);
            _mm256_storeu_ps(row.add(8), acc[1]);
        }
    }
}

//! What the AVX-512 kernels have around their arithmetic: the entry point the tiled matmul
//! calls for one row group, the unpacking of a tile's nibbles that Q4_0, Q4_1 and Q4_K share,
//! and the store of the accumulated rows (see `avx2_frame` for the AVX2 kernels').

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// Writes a format's AVX-512 `group` for its tile type `$tile`, one tile per `$blocks`
/// activation blocks: it calls the module's `micro_kernel::<R>` over the rows in steps of its
/// `MR` (see [`in_row_steps`]).
macro_rules! avx512_group {
    ($tile:ty, $blocks:expr) => {
        /// Writes the 16 columns of one row group for activation rows `rows`.
        ///
        /// # Safety
        /// The CPU has AVX-512 F/BW/VNNI; `out` is valid for writes of `rows.end` rows ×
        /// `stride` f32 from the start of the output; `tiles` holds the group's tiles.
        #[cfg(target_arch = "x86_64")]
        pub(super) unsafe fn group(
            tiles: &[$tile],
            acts: &$crate::activations::QuantizedRows,
            rows: ::std::ops::Range<usize>,
            out: *mut f32,
            stride: usize,
        ) {
            debug_assert_eq!(tiles.len() * $blocks, acts.blocks);
            // SAFETY: forwarded from the caller; each call covers rows `first..first + R` of
            // `rows`.
            unsafe {
                $crate::tiled::in_row_steps!(micro_kernel::<MR>(tiles, acts, out, stride; rows))
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
pub(crate) use avx512_group;

/// The low and the high nibbles of the four 64-byte words at `qs` (a tile's 256 bytes in
/// [`crate::PackedQ4_0`]'s order), as bytes 0..=15: `vpdpbusd`'s unsigned operand.
///
/// # Safety
/// `qs` points to 256 bytes (32-byte aligned, as tiles of 288 bytes are; the loads are
/// unaligned).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(crate) unsafe fn nibbles512(qs: *const u8) -> ([__m512i; 4], [__m512i; 4]) {
    let (qs, nibble) = (qs.cast::<__m512i>(), _mm512_set1_epi8(0x0f));
    // SAFETY: word `q` is the 64 bytes from `q * 64`, inside the caller's 256.
    let raw: [__m512i; 4] = std::array::from_fn(|q| unsafe { _mm512_loadu_si512(qs.add(q)) });
    (
        raw.map(|raw| _mm512_and_si512(raw, nibble)),
        raw.map(|raw| _mm512_and_si512(_mm512_srli_epi16(raw, 4), nibble)),
    )
}

/// Stores a micro-kernel's `R` rows of 16 accumulated columns, row `r` at
/// `out + (first + r) · stride`.
///
/// # Safety
/// Rows `first..first + R` are the caller's to write, 16 columns each from `out`.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn store_rows512<const R: usize>(
    acc: &[__m512; R],
    out: *mut f32,
    first: usize,
    stride: usize,
) {
    for (r, acc) in acc.iter().enumerate() {
        // SAFETY: row `first + r` is one of the caller's rows; 16 columns from `out`.
        unsafe { _mm512_storeu_ps(out.add((first + r) * stride), *acc) };
    }
}

/// A tile's 16 f16 scales (as the file stores them) widened to f32, one per lane.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) fn widen16(scales: &[half::f16; 16]) -> __m512 {
    // SAFETY: the load reads the 32 bytes of `scales`, unaligned.
    _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(scales.as_ptr().cast()) })
}

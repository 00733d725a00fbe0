//! How a 256-bit kernel multiplies unsigned weight bytes by signed activation bytes: AVX2's
//! `vpmaddubsw`, summing in i16 and widening once a block, or AVX-VNNI's `vpdpbusd`, summing
//! in i32. The kernels of the formats narrower than a byte (Q4_0, Q4_1, Q5_0, Q5_1, Q4_K,
//! Q5_K) take either as a type parameter, so the two instruction sets share one body, each
//! behind an entry point that enables its features.
//!
//! Every method is `#[inline(always)]` and enables nothing itself: it runs inlined into a
//! kernel whose `target_feature` has what it uses, and only there do the intrinsics inline.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// Sums of byte products, four to each 32-bit lane of a 256-bit register.
#[cfg(target_arch = "x86_64")]
pub(crate) trait ByteProducts {
    /// Whether a prompt's kernel unpacks a tile's words before its rows go over them, each row
    /// then holding only its own two sums, rather than word by word with every row's sums
    /// held. AVX2 spends three instructions a row and register on the products, and is bound
    /// by them, so unpacking once for eight rows paid; one `vpdpbusd` left AVX-VNNI bound by
    /// the loads of the unpacked values instead, and it goes word by word (four rows a call).
    const UNPACK_FIRST: bool;

    /// `sums` plus the products of the unsigned bytes `u` and the signed bytes `a`, and of
    /// `v` and `b`.
    ///
    /// # Safety
    /// Runs inlined into a kernel with the set's features (AVX2; AVX-VNNI for [`Vnni`]).
    unsafe fn add(sums: __m256i, ua: (__m256i, __m256i), vb: (__m256i, __m256i)) -> __m256i;

    /// `sums` (from zero, through [`Self::add`]) as exact i32 lanes.
    ///
    /// # Safety
    /// As for [`Self::add`].
    unsafe fn widen(sums: __m256i) -> __m256i;

    /// `sums` less `offset` (a pair of i16 in each lane, as `vpmaddwd` sums them), still as
    /// [`Self::add`] keeps them. The AVX2 sums may have wrapped in i16; they come back in range
    /// only once the offset is taken off, where the format's values less their offset keep
    /// each i16 within it.
    ///
    /// # Safety
    /// As for [`Self::add`].
    unsafe fn less(sums: __m256i, offset: __m256i) -> __m256i;

    /// [`Self::less`], as exact i32 lanes.
    ///
    /// # Safety
    /// As for [`Self::add`].
    #[inline(always)]
    unsafe fn widen_less(sums: __m256i, offset: __m256i) -> __m256i {
        // SAFETY: forwarded from the caller.
        unsafe { Self::widen(Self::less(sums, offset)) }
    }

    /// A K-quant sub-block's scales (a small unsigned integer per lane) as
    /// [`Self::add_times_scales`] takes them.
    ///
    /// # Safety
    /// As for [`Self::add`].
    unsafe fn sub_block_scales(scales: __m256i) -> __m256i;

    /// `acc` plus a sub-block's `sums` (through [`Self::add`] and [`Self::less`], each lane's
    /// two i16 within i16 on AVX2, the lane within 32 · 16 · 127 on AVX-VNNI) times its
    /// `scales` ([`Self::sub_block_scales`]), exactly, in i32.
    ///
    /// # Safety
    /// As for [`Self::add`].
    unsafe fn add_times_scales(acc: __m256i, sums: __m256i, scales: __m256i) -> __m256i;

    /// `acc` plus `vpmaddwd(a, b)`: one `vpdpwssd` where the set has it.
    ///
    /// # Safety
    /// As for [`Self::add`].
    unsafe fn add_madd(acc: __m256i, a: __m256i, b: __m256i) -> __m256i;
}

/// AVX2: `vpmaddubsw` sums adjacent products in i16 and `vpaddw` adds them, wrapping; one
/// `vpmaddwd` by ones widens a block's sums. Every lane takes at most 16 products before it
/// is widened, where a nibble's (at most 16 · 15 · 127) fits.
#[cfg(target_arch = "x86_64")]
pub(crate) enum Maddubs {}

#[cfg(target_arch = "x86_64")]
impl ByteProducts for Maddubs {
    const UNPACK_FIRST: bool = true;

    /// The two products summed first, then added to `sums`: one add in the chain through
    /// `sums` where adding each in turn takes two.
    #[inline(always)]
    unsafe fn add(
        sums: __m256i,
        (u, a): (__m256i, __m256i),
        (v, b): (__m256i, __m256i),
    ) -> __m256i {
        // SAFETY: the caller's kernel has AVX2.
        unsafe {
            let products = _mm256_add_epi16(_mm256_maddubs_epi16(u, a), _mm256_maddubs_epi16(v, b));
            _mm256_add_epi16(sums, products)
        }
    }

    #[inline(always)]
    unsafe fn widen(sums: __m256i) -> __m256i {
        // SAFETY: as above.
        unsafe { _mm256_madd_epi16(sums, _mm256_set1_epi16(1)) }
    }

    #[inline(always)]
    unsafe fn less(sums: __m256i, offset: __m256i) -> __m256i {
        // SAFETY: as above.
        unsafe { _mm256_sub_epi16(sums, offset) }
    }

    /// The scale in both i16 halves of its lane, where `vpmaddwd` meets the two i16 sums.
    #[inline(always)]
    unsafe fn sub_block_scales(scales: __m256i) -> __m256i {
        // SAFETY: as above.
        unsafe { _mm256_or_si256(scales, _mm256_slli_epi32(scales, 16)) }
    }

    #[inline(always)]
    unsafe fn add_times_scales(acc: __m256i, sums: __m256i, scales: __m256i) -> __m256i {
        // SAFETY: as above.
        unsafe { _mm256_add_epi32(acc, _mm256_madd_epi16(sums, scales)) }
    }

    #[inline(always)]
    unsafe fn add_madd(acc: __m256i, a: __m256i, b: __m256i) -> __m256i {
        // SAFETY: as above.
        unsafe { _mm256_add_epi32(acc, _mm256_madd_epi16(a, b)) }
    }
}

/// AVX-VNNI: one `vpdpbusd` adds four products to each i32 lane, which holds any sum exactly.
#[cfg(target_arch = "x86_64")]
pub(crate) enum Vnni {}

#[cfg(target_arch = "x86_64")]
impl ByteProducts for Vnni {
    const UNPACK_FIRST: bool = false;

    #[inline(always)]
    unsafe fn add(
        sums: __m256i,
        (u, a): (__m256i, __m256i),
        (v, b): (__m256i, __m256i),
    ) -> __m256i {
        // SAFETY: the caller's kernel has AVX-VNNI.
        unsafe { _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(sums, u, a), v, b) }
    }

    #[inline(always)]
    unsafe fn widen(sums: __m256i) -> __m256i {
        sums
    }

    #[inline(always)]
    unsafe fn less(sums: __m256i, offset: __m256i) -> __m256i {
        // SAFETY: the caller's kernel has AVX2.
        unsafe { _mm256_sub_epi32(sums, _mm256_madd_epi16(offset, _mm256_set1_epi16(1))) }
    }

    #[inline(always)]
    unsafe fn sub_block_scales(scales: __m256i) -> __m256i {
        scales
    }

    /// `vpmulld`: a lane's 32 products may pass i16 (Q4_K's 32 · 15 · 127, Q5_K's 32 · 16 ·
    /// 127), so `vpdpwssd` cannot take the sum.
    #[inline(always)]
    unsafe fn add_times_scales(acc: __m256i, sums: __m256i, scales: __m256i) -> __m256i {
        // SAFETY: the caller's kernel has AVX2.
        unsafe { _mm256_add_epi32(acc, _mm256_mullo_epi32(sums, scales)) }
    }

    #[inline(always)]
    unsafe fn add_madd(acc: __m256i, a: __m256i, b: __m256i) -> __m256i {
        // SAFETY: the caller's kernel has AVX-VNNI.
        unsafe { _mm256_dpwssd_avx_epi32(acc, a, b) }
    }
}

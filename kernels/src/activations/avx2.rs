//! [`super::quantize_blocks`] on AVX2: a block's 32 values in four registers. Decode quantizes
//! each matmul's input row alone, 121 times a token for Qwen2.5-0.5B, and the scalar loop
//! (whose saturating `as i8` LLVM does not vectorize) took half a millisecond of each token.

use std::arch::x86_64::*;

use super::{Entries, block_scale, half_sum};

/// # Safety
/// The CPU has AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn quantize_blocks(lhs: &[f32], entries: Entries) {
    for (block, words, scale, offset, pairs) in entries.slots(lhs) {
        // SAFETY: `block` is 32 f32, four loads of eight.
        let x: [__m256; 4] =
            std::array::from_fn(|i| unsafe { _mm256_loadu_ps(block.as_ptr().add(8 * i)) });
        // NaN counts as 0 in the largest magnitude and quantizes to 0 (so does an infinity,
        // times the 0 inverse of an infinite largest), as `f32::max` and the saturating `as i8`
        // of the scalar path treat them.
        let magnitude = x.map(|v| {
            _mm256_and_ps(
                _mm256_andnot_ps(_mm256_set1_ps(-0.0), v),
                _mm256_cmp_ps::<_CMP_ORD_Q>(v, v),
            )
        });
        let amax = horizontal_max(_mm256_max_ps(
            _mm256_max_ps(magnitude[0], magnitude[1]),
            _mm256_max_ps(magnitude[2], magnitude[3]),
        ));
        let inverse;
        (inverse, *scale) = block_scale(amax);
        let q = x.map(|v| {
            let v = _mm256_mul_ps(v, _mm256_set1_ps(inverse));
            let v = _mm256_and_ps(v, _mm256_cmp_ps::<_CMP_ORD_Q>(v, v));
            _mm256_cvttps_epi32(round_half_away(v))
        });
        // i32 → i16 → i8 with saturation (as `as i8` saturates), then the words back in value
        // order: the packs interleave the registers' 128-bit halves.
        let bytes = _mm256_packs_epi16(
            _mm256_packs_epi32(q[0], q[1]),
            _mm256_packs_epi32(q[2], q[3]),
        );
        let bytes = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        // SAFETY: `words` is 8 i32, 32 bytes.
        unsafe { _mm256_storeu_si256(words.as_mut_ptr().cast(), bytes) };
        // Adjacent pairs summed in i16, then each half's four words added as i16 pairs: the
        // low i16 of a half sums `a[4q] + a[4q + 1]`, the high one `a[4q + 2] + a[4q + 3]`.
        let pairs16 = _mm256_maddubs_epi16(_mm256_set1_epi8(1), bytes);
        let folded = _mm256_add_epi16(pairs16, _mm256_shuffle_epi32::<0b01_00_11_10>(pairs16));
        let folded = _mm256_add_epi16(folded, _mm256_shuffle_epi32::<0b10_11_00_01>(folded));
        *pairs = [
            _mm256_extract_epi32::<0>(folded),
            _mm256_extract_epi32::<4>(folded),
        ];
        *offset = -128 * (half_sum(pairs[0]) + half_sum(pairs[1]));
    }
}

/// The largest of the eight lanes.
#[target_feature(enable = "avx2")]
fn horizontal_max(v: __m256) -> f32 {
    let v = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
    let v = _mm_max_ps(v, _mm_movehl_ps(v, v));
    let v = _mm_max_ss(v, _mm_movehdup_ps(v));
    _mm_cvtss_f32(v)
}

/// `f32::round` lane by lane: to the nearest integer, halves away from zero (the vector
/// rounding mode takes halves to even). `v − trunc(v)` is exact, so the test on it is too.
#[target_feature(enable = "avx2")]
fn round_half_away(v: __m256) -> __m256 {
    let truncated = _mm256_round_ps::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(v);
    let fraction = _mm256_andnot_ps(_mm256_set1_ps(-0.0), _mm256_sub_ps(v, truncated));
    let away = _mm256_cmp_ps::<_CMP_GE_OQ>(fraction, _mm256_set1_ps(0.5));
    let one = _mm256_or_ps(_mm256_set1_ps(1.0), _mm256_and_ps(v, _mm256_set1_ps(-0.0)));
    _mm256_add_ps(truncated, _mm256_and_ps(away, one))
}

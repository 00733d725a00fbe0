//! [`super::quantize_blocks`] on AVX2: a block's 32 values in four registers. Decode quantizes
//! each matmul's input row alone, 121 times a token for Qwen2.5-0.5B, and the scalar loop
//! (whose saturating `as i8` LLVM does not vectorize) took half a millisecond of each token.

use std::arch::x86_64::*;

use super::{BLOCK, BlockSlots, Entries, SUPER, Scheme, block_scale, half_sum, super_scale};

/// # Safety
/// The CPU has AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn quantize_blocks(lhs: &[f32], entries: Entries, scheme: Scheme) {
    let mut slots = entries.slots(lhs);
    match scheme {
        Scheme::Q8_0 => {
            for slot in slots {
                let x = load_block(slot.0);
                let m = x.map(|v| magnitude(v));
                let amax = horizontal_max(_mm256_max_ps(
                    _mm256_max_ps(m[0], m[1]),
                    _mm256_max_ps(m[2], m[3]),
                ));
                let (inverse, scale) = block_scale(amax);
                fill(slot, x, inverse, scale, false);
            }
        }
        Scheme::Q8_K => {
            for span in lhs.chunks_exact(SUPER) {
                let (inverse, scale) = super_scale(largest(span));
                for slot in slots.by_ref().take(SUPER / BLOCK) {
                    let x = load_block(slot.0);
                    fill(slot, x, inverse, scale, true);
                }
            }
        }
    }
}

/// A block's 32 values.
#[target_feature(enable = "avx2")]
fn load_block(block: &[f32]) -> [__m256; 4] {
    assert_eq!(block.len(), BLOCK);
    // SAFETY: `block` is 32 f32, four loads of eight.
    std::array::from_fn(|i| unsafe { _mm256_loadu_ps(block.as_ptr().add(8 * i)) })
}

/// `|v|`, with NaN as 0: NaN counts as 0 in the largest magnitude and quantizes to 0 (so does
/// an infinity, times the 0 inverse of an infinite largest), as `f32::max` and the saturating
/// `as i8` of the scalar path treat them.
#[target_feature(enable = "avx2")]
fn magnitude(v: __m256) -> __m256 {
    _mm256_and_ps(
        _mm256_andnot_ps(_mm256_set1_ps(-0.0), v),
        _mm256_cmp_ps::<_CMP_ORD_Q>(v, v),
    )
}

/// The first value of `span` (256 values) whose magnitude is the largest, or 0 where all are
/// 0 or NaN: the `max` of ggml's Q8_K.
#[target_feature(enable = "avx2")]
fn largest(span: &[f32]) -> f32 {
    let eights = span.chunks_exact(8);
    // SAFETY (both loads): each chunk is 8 f32.
    let amax = eights.clone().fold(_mm256_setzero_ps(), |a, x| {
        _mm256_max_ps(a, magnitude(unsafe { _mm256_loadu_ps(x.as_ptr()) }))
    });
    let amax = horizontal_max(amax);
    if amax == 0.0 {
        return 0.0;
    }
    let wanted = _mm256_set1_ps(amax);
    for x in eights {
        let v = unsafe { _mm256_loadu_ps(x.as_ptr()) };
        let hits = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_EQ_OQ>(magnitude(v), wanted));
        if hits != 0 {
            return x[hits.trailing_zeros() as usize];
        }
    }
    unreachable!("the largest magnitude is one of the span's")
}

/// Writes one block's entries from its values `x`: times `inverse`, rounded half to even or
/// half away from zero, and `scale` (see the scalar path's `fill_scalar`).
#[target_feature(enable = "avx2")]
fn fill(
    (_, words, scale_slot, offset, pairs): BlockSlots,
    x: [__m256; 4],
    inverse: f32,
    scale: f32,
    half_even: bool,
) {
    *scale_slot = scale;
    let q = x.map(|v| {
        let v = _mm256_mul_ps(v, _mm256_set1_ps(inverse));
        let v = _mm256_and_ps(v, _mm256_cmp_ps::<_CMP_ORD_Q>(v, v));
        let rounded = if half_even {
            round_half_even(v)
        } else {
            round_half_away(v)
        };
        _mm256_cvttps_epi32(rounded)
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

/// `f32::round_ties_even` lane by lane: the vector rounding to nearest, as ggml's
/// `nearest_int` rounds.
#[target_feature(enable = "avx2")]
fn round_half_even(v: __m256) -> __m256 {
    _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(v)
}

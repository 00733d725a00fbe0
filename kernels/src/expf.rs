//! `expf` as the C library computes it, four values at a time (x86_64 only): the MLP's SiLU
//! takes one exponential per value, and called one at a time they were most of its time.
//!
//! glibc's `expf` (since 2.27; the algorithm and its constants are those of Arm's
//! optimized-routines, MIT or Apache-2.0) works in double precision: `x · 32/ln 2` is split
//! into an integer `k` and a remainder `r`, `2^(r/32)` comes from a cubic, `2^(k/32)` from a
//! table of 32 powers with the rest of `k` added to its exponent, and the product is rounded
//! to f32 once. On a CPU with FMA the library runs its FMA build, whose multiply-adds this
//! follows one for one, so each value comes out as the library's to the bit.
//!
//! Whether this process's C library is that one (another libc, an older glibc, a CPU without
//! FMA) is not assumed: [`matches_libm`] compares the two on a spread of values once, and
//! callers keep calling `f32::exp` where they differ. Values of magnitude 88 and above (an
//! overflow, an underflow, a subnormal result, infinities and NaN) always take the library's
//! own `expf`.

use std::arch::x86_64::*;

/// `32 / ln 2`, rounded to double.
const INV_LN2_N: f64 = f64::from_bits(0x4047_1547_652b_82fe);
/// `1.5 · 2^52`: added to a double below 2^51 in magnitude, it leaves the nearest integer in
/// the low bits of the sum.
const SHIFT: f64 = f64::from_bits(0x4338_0000_0000_0000);
/// The cubic for `2^(r/32)`, `r` in [−1/2, 1/2]: `(C0·r + C1)·r² + (C2·r + 1)`.
const C0: f64 = f64::from_bits(0x3ebc_6af8_4b91_2394);
const C1: f64 = f64::from_bits(0x3f2e_bfce_50fa_c4f3);
const C2: f64 = f64::from_bits(0x3f96_2e42_ff0c_52d6);
/// `2^(i/32)` rounded to double, less `i · 2^47` in its bits: adding `k · 2^47` to entry
/// `k mod 32` gives `2^(k/32)`, the whole part of `k/32` landing in the exponent.
const POWERS: [u64; 32] = [
    0x3ff0000000000000,
    0x3fefd9b0d3158574,
    0x3fefb5586cf9890f,
    0x3fef9301d0125b51,
    0x3fef72b83c7d517b,
    0x3fef54873168b9aa,
    0x3fef387a6e756238,
    0x3fef1e9df51fdee1,
    0x3fef06fe0a31b715,
    0x3feef1a7373aa9cb,
    0x3feedea64c123422,
    0x3feece086061892d,
    0x3feebfdad5362a27,
    0x3feeb42b569d4f82,
    0x3feeab07dd485429,
    0x3feea47eb03a5585,
    0x3feea09e667f3bcd,
    0x3fee9f75e8ec5f74,
    0x3feea11473eb0187,
    0x3feea589994cce13,
    0x3feeace5422aa0db,
    0x3feeb737b0cdc5e5,
    0x3feec49182a3f090,
    0x3feed503b23e255d,
    0x3feee89f995ad3ad,
    0x3feeff76f2fb5e47,
    0x3fef199bdd85529c,
    0x3fef3720dcef9069,
    0x3fef5818dcfba487,
    0x3fef7c97337b9b5f,
    0x3fefa4afa2a490da,
    0x3fefd0765b6e4540,
];

/// Magnitudes from this one up leave the common path (the library's own test, on the bits'
/// top twelve: 88.0).
const LARGE: u32 = 0x42b0_0000;

/// Whether [`exp4`] gives `f32::exp`'s bits in this process: the CPU has AVX2 and FMA, and a
/// spread of values over the whole common range (and the edges of it) came out the same.
/// Checked once, and held in a static, as the standard library holds the CPU's features.
pub(crate) fn matches_libm() -> bool {
    static MATCHES: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *MATCHES.get_or_init(check_against_libm)
}

fn check_against_libm() -> bool {
    if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")) {
        return false;
    }
    // Every 16411th f32 bit pattern below 88, of either sign, and the edges: about 137,000
    // values, once per process. A library with other arithmetic (another algorithm, a build
    // without FMA) differs from this one on far more than one value in that many.
    let probes = (0..f32::from_bits(LARGE).to_bits())
        .step_by(16411)
        .chain([0, 1, LARGE - 1])
        .flat_map(|bits| [f32::from_bits(bits), -f32::from_bits(bits)]);
    let mut batch = [0f32; 4];
    let mut filled = 0;
    for x in probes {
        batch[filled] = x;
        filled += 1;
        if filled == 4 {
            // SAFETY: the CPU has AVX2 and FMA (checked above).
            let got = unsafe { exp4(batch) };
            if got
                .iter()
                .zip(batch)
                .any(|(g, x)| g.to_bits() != x.exp().to_bits())
            {
                return false;
            }
            filled = 0;
        }
    }
    true
}

/// `expf` of four values, each as the C library's FMA build computes it (see the module).
///
/// # Safety
/// The CPU has AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn exp4(x: [f32; 4]) -> [f32; 4] {
    // SAFETY: `x` is four f32.
    let lanes = unsafe { _mm_loadu_ps(x.as_ptr()) };
    let mut out = [0f32; 4];
    // SAFETY: `out` is four f32; the CPU has AVX2 and FMA (this function's contract).
    unsafe { _mm_storeu_ps(out.as_mut_ptr(), exp_lanes(lanes)) };
    let large = x.iter().any(|x| x.to_bits() & 0x7fff_ffff >= LARGE);
    if large {
        for (out, x) in out.iter_mut().zip(x) {
            if x.to_bits() & 0x7fff_ffff >= LARGE {
                *out = x.exp();
            }
        }
    }
    out
}

/// Whether any of the four values leaves the common path (see [`LARGE`]), or is NaN.
///
/// # Safety
/// The CPU has AVX2.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn is_large(x: __m128) -> bool {
    let magnitude = _mm_and_si128(_mm_castps_si128(x), _mm_set1_epi32(0x7fff_ffff));
    let large = _mm_cmpgt_epi32(magnitude, _mm_set1_epi32(LARGE as i32 - 1));
    _mm_movemask_epi8(large) != 0
}

/// The common path of [`exp4`], for magnitudes below 88.
///
/// # Safety
/// The CPU has AVX2 and FMA.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn exp_lanes(x: __m128) -> __m128 {
    let xd = _mm256_cvtps_pd(x);
    let inv_ln2_n = _mm256_set1_pd(INV_LN2_N);
    let shift = _mm256_set1_pd(SHIFT);
    // k = round(x · 32/ln 2), in the low bits of `z`; r = x · 32/ln 2 − k, each one rounding.
    let z = _mm256_fmadd_pd(inv_ln2_n, xd, shift);
    let ki = _mm256_castpd_si256(z);
    let kd = _mm256_sub_pd(z, shift);
    let r = _mm256_fmsub_pd(inv_ln2_n, xd, kd);
    // 2^(k/32): the table's entry for k mod 32, k · 2^47 added to its bits.
    let index = _mm256_and_si256(ki, _mm256_set1_epi64x(31));
    // SAFETY: every index is below 32, the table's length.
    let entry = unsafe { _mm256_i64gather_epi64::<8>(POWERS.as_ptr().cast(), index) };
    let scale = _mm256_castsi256_pd(_mm256_add_epi64(entry, _mm256_slli_epi64::<47>(ki)));
    let high = _mm256_fmadd_pd(_mm256_set1_pd(C0), r, _mm256_set1_pd(C1));
    let r2 = _mm256_mul_pd(r, r);
    let low = _mm256_fmadd_pd(_mm256_set1_pd(C2), r, _mm256_set1_pd(1.0));
    let y = _mm256_fmadd_pd(high, r2, low);
    _mm256_cvtpd_ps(_mm256_mul_pd(y, scale))
}

/// Whether any of sixteen values leaves the common path (see [`LARGE`]), or is NaN.
///
/// # Safety
/// The CPU has AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn is_large16(x: __m512) -> bool {
    let magnitude = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fff_ffff));
    _mm512_cmpgt_epi32_mask(magnitude, _mm512_set1_epi32(LARGE as i32 - 1)) != 0
}

/// [`exp_lanes`] for sixteen values, eight doubles to a register: the same operations on each
/// value, so the same bits. The table's 32 entries come from two permutes across two registers
/// each, where the four-lane form gathers them: the SiLU's exponentials in half the
/// instructions.
///
/// # Safety
/// The CPU has AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn exp_lanes16(x: __m512) -> __m512 {
    // SAFETY (all four): `POWERS` is 32 u64, four registers of eight.
    let table: [__m512i; 4] =
        std::array::from_fn(|i| unsafe { _mm512_loadu_si512(POWERS.as_ptr().add(8 * i).cast()) });
    let halves = [
        _mm512_castps512_ps256(x),
        _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(x))),
    ]
    .map(|half| exp_eight(half, &table));
    _mm512_castpd_ps(_mm512_insertf64x4::<1>(
        _mm512_castpd256_pd512(_mm256_castps_pd(halves[0])),
        _mm256_castps_pd(halves[1]),
    ))
}

/// [`exp_lanes`]'s steps on eight values, `table` holding [`POWERS`].
#[inline]
#[target_feature(enable = "avx512f")]
fn exp_eight(x: __m256, table: &[__m512i; 4]) -> __m256 {
    let xd = _mm512_cvtps_pd(x);
    let inv_ln2_n = _mm512_set1_pd(INV_LN2_N);
    let shift = _mm512_set1_pd(SHIFT);
    let z = _mm512_fmadd_pd(inv_ln2_n, xd, shift);
    let ki = _mm512_castpd_si512(z);
    let kd = _mm512_sub_pd(z, shift);
    let r = _mm512_fmsub_pd(inv_ln2_n, xd, kd);
    // Entries 0–15 and 16–31 by the index's low four bits, then one or the other by its fifth.
    let low = _mm512_permutex2var_epi64(table[0], ki, table[1]);
    let high = _mm512_permutex2var_epi64(table[2], ki, table[3]);
    let upper = _mm512_test_epi64_mask(ki, _mm512_set1_epi64(16));
    let entry = _mm512_mask_blend_epi64(upper, low, high);
    let scale = _mm512_castsi512_pd(_mm512_add_epi64(entry, _mm512_slli_epi64::<47>(ki)));
    let high = _mm512_fmadd_pd(_mm512_set1_pd(C0), r, _mm512_set1_pd(C1));
    let r2 = _mm512_mul_pd(r, r);
    let low = _mm512_fmadd_pd(_mm512_set1_pd(C2), r, _mm512_set1_pd(1.0));
    let y = _mm512_fmadd_pd(high, r2, low);
    _mm512_cvtpd_ps(_mm512_mul_pd(y, scale))
}

#[cfg(test)]
mod tests {
    use std::arch::x86_64::*;

    use super::{LARGE, exp_lanes, exp_lanes16, exp4, is_large16, matches_libm};

    /// The sixteen-lane form gives the four-lane form's bits on every value of the common path
    /// that the test below samples, and finds the values that leave it.
    #[test]
    fn sixteen_at_a_time_is_four_at_a_time() {
        if !(is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("fma")) {
            eprintln!("skipped: this CPU has no AVX-512F and FMA");
            return;
        }
        let common = (0..u32::MAX)
            .step_by(251)
            .map(f32::from_bits)
            .filter(|x| x.to_bits() & 0x7fff_ffff < LARGE);
        let values: Vec<f32> = [0.0, -0.0, 87.99, -87.99]
            .into_iter()
            .chain(common)
            .collect();
        for sixteen in values.chunks_exact(16) {
            let (mut wide, mut narrow) = ([0f32; 16], [0f32; 16]);
            // SAFETY: the CPU has AVX-512F, AVX2 and FMA (checked above); the arrays hold 16.
            unsafe {
                let x = _mm512_loadu_ps(sixteen.as_ptr());
                assert!(!is_large16(x));
                _mm512_storeu_ps(wide.as_mut_ptr(), exp_lanes16(x));
                for (four, out) in sixteen.chunks_exact(4).zip(narrow.chunks_exact_mut(4)) {
                    _mm_storeu_ps(out.as_mut_ptr(), exp_lanes(_mm_loadu_ps(four.as_ptr())));
                }
            }
            let bits = |v: [f32; 16]| v.map(f32::to_bits);
            assert_eq!(bits(wide), bits(narrow), "exp of {sixteen:?}");
        }
        for odd in [88.0, -88.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let mut x = [1.0f32; 16];
            x[11] = odd;
            // SAFETY: as above.
            assert!(unsafe { is_large16(_mm512_loadu_ps(x.as_ptr())) }, "{odd}");
        }
    }

    /// Where the library is glibc's FMA build, every sampled value's exponential is its bits,
    /// the large and special values included (they take the library's path).
    #[test]
    fn the_exponentials_are_the_c_library_s() {
        let glibc_with_fma = cfg!(all(target_os = "linux", target_env = "gnu"))
            && is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma");
        if !matches_libm() {
            // Where the library is glibc (2.27 on), a mismatch means a bug here, or a glibc
            // whose expf changed: either way the SiLU would quietly lose its speed.
            assert!(!glibc_with_fma, "glibc's expf and exp4 differ");
            eprintln!("this C library's expf is not glibc's FMA build: the check keeps f32::exp");
            return;
        }
        let specials = [
            0.0,
            -0.0,
            f32::MIN_POSITIVE,
            88.0,
            -88.0,
            88.7,
            -103.5,
            -104.0,
            1000.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
        ];
        let sampled = (0..u32::MAX).step_by(251).map(f32::from_bits);
        let values: Vec<f32> = specials.into_iter().chain(sampled).collect();
        for four in values.chunks_exact(4) {
            let four = [four[0], four[1], four[2], four[3]];
            // SAFETY: `matches_libm` found AVX2 and FMA.
            let got = unsafe { exp4(four) };
            for (got, x) in got.into_iter().zip(four) {
                let want = x.exp();
                assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "exp({x:e}) = {want:e}, got {got:e}"
                );
            }
        }
        assert!(f32::from_bits(LARGE) == 88.0);
    }
}

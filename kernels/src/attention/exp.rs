//! `exp(x - shift)` for the softmax: a form that auto-vectorizes for every path, and AVX2 and
//! AVX-512 ones that give the same bits faster.

/// log₂ e.
const LOG2E: f32 = std::f32::consts::LOG2_E;
/// 2^23: the unit of the last mantissa bit of a float in [2^23, 2^24) is 1.
const MANTISSA_ONE: f32 = 8_388_608.0;
/// ln 2 split in two so that `n · LN2_HI` is exact.
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
/// Cephes' `expf` coefficients for `e^r` on `|r| ≤ ln2/2`, highest degree first.
const P: [f32; 6] = [
    1.987_569_1e-4,
    1.398_199_9e-3,
    8.333_452e-3,
    4.166_579_6e-2,
    0.166_666_65,
    0.5,
];
/// Inputs are clamped here: below it `e^x` would be a denormal.
const FLOOR: f32 = -87.0;

/// `x = exp(x - shift)` for `x ≤ shift`, to within 2 ulp, in a form that vectorizes: `2^n ·
/// p(r)` with `n = round(x·log2 e)` and a degree-6 polynomial for `e^r` on `|r| ≤ ln2/2`.
/// Inputs below -87 give about 1e-38 instead of a denormal.
#[inline(always)]
pub(super) fn exp_shifted(xs: &mut [f32], shift: f32) {
    for x in xs.iter_mut() {
        let t = (*x - shift).max(FLOOR);
        let n = (t * LOG2E + 0.5).floor();
        let r = t - n * LN2_HI - n * LN2_LO;
        let mut p = P[0];
        for c in &P[1..] {
            p = p.mul_add(r, *c);
        }
        let e = (p * r).mul_add(r, r) + 1.0;
        // 2^n built from its exponent bits. Adding 2^23 to the biased exponent `n + 127` (an
        // integer in 1..=127 here) leaves it in the low bits of the sum's mantissa: integer
        // arithmetic that vectorizes, where `n as i32` (saturating, NaN to 0) became a scalar
        // conversion with two compares per lane and took a fifth of the attention's time.
        // Wrapping: a row whose scores hold a NaN or an infinity gets a meaningless weight,
        // as it did before, and never a panic.
        let biased = (n + (127.0 + MANTISSA_ONE))
            .to_bits()
            .wrapping_sub(MANTISSA_ONE.to_bits());
        let pow2 = f32::from_bits(biased << 23);
        *x = e * pow2;
    }
}

/// [`exp_shifted`] with AVX2 and FMA, four registers at a time, to the bit: the same
/// operations in the same order, only interleaved. Compiled from the loop above, each register
/// of eight went through its chain of some twenty dependent operations before the next began,
/// and the CPU's window did not reach far enough to overlap them: 1.9 cycles an element on a
/// 2-core AMD EPYC Zen 2 VM, against 1.4 with four chains side by side (one thread, rows of 64
/// from L1).
///
/// # Safety
/// The CPU has AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn exp_shifted_avx2(xs: &mut [f32], shift: f32) {
    use std::arch::x86_64::*;
    const LANES: usize = 8;
    const WIDTH: usize = 4 * LANES;
    let shifts = _mm256_set1_ps(shift);
    let mut chunks = xs.chunks_exact_mut(WIDTH);
    for chunk in &mut chunks {
        let p = chunk.as_mut_ptr();
        // SAFETY (both): the chunk holds four registers of f32.
        let x: [__m256; 4] = std::array::from_fn(|i| unsafe { _mm256_loadu_ps(p.add(i * LANES)) });
        let y = exp_lanes(x, shifts);
        for (i, y) in y.into_iter().enumerate() {
            unsafe { _mm256_storeu_ps(p.add(i * LANES), y) };
        }
    }
    let mut rest = chunks.into_remainder().chunks_exact_mut(LANES);
    for lane in &mut rest {
        // SAFETY (both): the chunk holds eight f32.
        let [y] = exp_lanes([unsafe { _mm256_loadu_ps(lane.as_ptr()) }], shifts);
        unsafe { _mm256_storeu_ps(lane.as_mut_ptr(), y) };
    }
    exp_shifted(rest.into_remainder(), shift);
}

/// [`exp_shifted_avx2`] sixteen lanes to a register, for the AVX-512 attention kernel: the
/// same steps, so the same bits. A tail of fewer than 64 values goes to the AVX2 form.
///
/// # Safety
/// The CPU has AVX-512F, AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(super) unsafe fn exp_shifted_avx512(xs: &mut [f32], shift: f32) {
    use std::arch::x86_64::*;
    const LANES: usize = 16;
    const WIDTH: usize = 4 * LANES;
    let shifts = _mm512_set1_ps(shift);
    let mut chunks = xs.chunks_exact_mut(WIDTH);
    for chunk in &mut chunks {
        let p = chunk.as_mut_ptr();
        // SAFETY (both): the chunk holds four registers of f32.
        let x: [__m512; 4] = std::array::from_fn(|i| unsafe { _mm512_loadu_ps(p.add(i * LANES)) });
        let y = exp_lanes512(x, shifts);
        for (i, y) in y.into_iter().enumerate() {
            unsafe { _mm512_storeu_ps(p.add(i * LANES), y) };
        }
    }
    // SAFETY: the CPU has AVX2 and FMA (this function's contract).
    unsafe { exp_shifted_avx2(chunks.into_remainder(), shift) };
}

/// [`exp_lanes`] on 512-bit registers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn exp_lanes512<const V: usize>(
    x: [std::arch::x86_64::__m512; V],
    shift: std::arch::x86_64::__m512,
) -> [std::arch::x86_64::__m512; V] {
    use std::arch::x86_64::*;
    let splat = _mm512_set1_ps;
    // Toward −∞, exceptions suppressed: `floor`.
    const FLOOR_MODE: i32 = _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC;
    // `max` returns its second operand where the first is NaN, as `f32::max` does here.
    let t = x.map(|x| _mm512_max_ps(_mm512_sub_ps(x, shift), splat(FLOOR)));
    let n = t.map(|t| {
        _mm512_roundscale_ps::<FLOOR_MODE>(_mm512_add_ps(
            _mm512_mul_ps(t, splat(LOG2E)),
            splat(0.5),
        ))
    });
    let r: [__m512; V] = std::array::from_fn(|i| {
        let hi = _mm512_sub_ps(t[i], _mm512_mul_ps(n[i], splat(LN2_HI)));
        _mm512_sub_ps(hi, _mm512_mul_ps(n[i], splat(LN2_LO)))
    });
    let mut p = [splat(P[0]); V];
    for &c in &P[1..] {
        for (p, r) in p.iter_mut().zip(r) {
            *p = _mm512_fmadd_ps(*p, r, splat(c));
        }
    }
    std::array::from_fn(|i| {
        let e = _mm512_add_ps(
            _mm512_fmadd_ps(_mm512_mul_ps(p[i], r[i]), r[i], r[i]),
            splat(1.0),
        );
        let biased = _mm512_sub_epi32(
            _mm512_castps_si512(_mm512_add_ps(n[i], splat(127.0 + MANTISSA_ONE))),
            _mm512_set1_epi32(MANTISSA_ONE.to_bits() as i32),
        );
        _mm512_mul_ps(e, _mm512_castsi512_ps(_mm512_slli_epi32::<23>(biased)))
    })
}

/// [`exp_shifted`]'s steps on `V` registers, each step for all of them before the next.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
fn exp_lanes<const V: usize>(
    x: [std::arch::x86_64::__m256; V],
    shift: std::arch::x86_64::__m256,
) -> [std::arch::x86_64::__m256; V] {
    use std::arch::x86_64::*;
    let splat = _mm256_set1_ps;
    // `max` returns its second operand where the first is NaN, as `f32::max` does here.
    let t = x.map(|x| _mm256_max_ps(_mm256_sub_ps(x, shift), splat(FLOOR)));
    let n = t.map(|t| _mm256_floor_ps(_mm256_add_ps(_mm256_mul_ps(t, splat(LOG2E)), splat(0.5))));
    let r: [__m256; V] = std::array::from_fn(|i| {
        let hi = _mm256_sub_ps(t[i], _mm256_mul_ps(n[i], splat(LN2_HI)));
        _mm256_sub_ps(hi, _mm256_mul_ps(n[i], splat(LN2_LO)))
    });
    let mut p = [splat(P[0]); V];
    for &c in &P[1..] {
        for (p, r) in p.iter_mut().zip(r) {
            *p = _mm256_fmadd_ps(*p, r, splat(c));
        }
    }
    std::array::from_fn(|i| {
        let e = _mm256_add_ps(
            _mm256_fmadd_ps(_mm256_mul_ps(p[i], r[i]), r[i], r[i]),
            splat(1.0),
        );
        let biased = _mm256_sub_epi32(
            _mm256_castps_si256(_mm256_add_ps(n[i], splat(127.0 + MANTISSA_ONE))),
            _mm256_set1_epi32(MANTISSA_ONE.to_bits() as i32),
        );
        _mm256_mul_ps(e, _mm256_castsi256_ps(_mm256_slli_epi32::<23>(biased)))
    })
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::{exp_shifted, exp_shifted_avx2, exp_shifted_avx512};

    /// The AVX2 form, and the AVX-512 one where the CPU has it, give the portable one's bits
    /// for every length (four registers, one, and a tail of single values) over the softmax's
    /// range, past its floor, and for the values a broken row may hold.
    #[test]
    fn the_avx2_and_avx512_forms_give_the_portable_bits() {
        if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")) {
            eprintln!("skipped: this CPU has no AVX2 and FMA");
            return;
        }
        let mut xs: Vec<f32> = (0..=100_000).map(|i| -(i as f32) / 1000.0).collect();
        xs.extend([
            0.0,
            -0.0,
            1e-30,
            -1e30,
            f32::NEG_INFINITY,
            f32::INFINITY,
            f32::NAN,
            f32::MIN,
            3.5,
        ]);
        for len in [
            0,
            1,
            7,
            8,
            9,
            15,
            16,
            17,
            31,
            32,
            33,
            63,
            64,
            65,
            71,
            80,
            xs.len(),
        ] {
            for shift in [0.0, 2.5, -40.0] {
                let (mut want, mut got) = (xs[..len].to_vec(), xs[..len].to_vec());
                exp_shifted(&mut want, shift);
                // SAFETY: the CPU has AVX2 and FMA (checked above).
                unsafe { exp_shifted_avx2(&mut got, shift) };
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
                assert!(bits(&got) == bits(&want), "{len} values, shift {shift}");
                if is_x86_feature_detected!("avx512f") {
                    let mut wide = xs[..len].to_vec();
                    // SAFETY: the CPU has AVX-512F, AVX2 and FMA (checked).
                    unsafe { exp_shifted_avx512(&mut wide, shift) };
                    assert!(
                        bits(&wide) == bits(&want),
                        "AVX-512: {len} values, shift {shift}"
                    );
                }
            }
        }
    }
}

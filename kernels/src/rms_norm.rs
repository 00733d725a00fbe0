//! RMS normalization of activation rows, optionally after adding a residual branch, to the bit
//! what candle's `rms_norm` (and its `+`) give.
//!
//! candle sums each row's squares in one running f32 sum, a chain of dependent additions as long
//! as the row; run one row at a time, that chain is the whole cost. Here eight rows are summed
//! together, each in its own running sum in the same order, so the sums are candle's to the bit
//! while eight chains are in flight, and the rows of a prompt chunk are split between threads.

use std::mem::MaybeUninit;

use rayon::prelude::*;

use crate::uninit::{as_uninit, assume_init};

/// Memory a kernel writes before it holds values.
type Unwritten<'a> = &'a mut [MaybeUninit<f32>];

/// Rows summed together.
const ROWS: usize = 8;

/// Rows below this many values run on the calling thread (a decoded token's one row).
const PARALLEL_MIN_VALUES: usize = 16 * 1024;

/// `out[r] = x[r] / √(mean(x[r]²) + eps) · alpha` for each row `r` of `x` (rows of
/// `alpha.len()` values), as candle computes it.
///
/// # Panics
/// If `alpha` is empty or the lengths are not whole rows of the same count.
pub fn rms_norm(x: &[f32], alpha: &[f32], eps: f32, out: &mut [f32]) {
    rms_norm_uninit(x, alpha, eps, as_uninit(out));
}

/// [`rms_norm`] into memory that holds no values yet, all of which it writes.
///
/// # Panics
/// As for [`rms_norm`].
pub fn rms_norm_uninit(x: &[f32], alpha: &[f32], eps: f32, out: &mut [MaybeUninit<f32>]) {
    check(x.len(), out.len(), alpha.len());
    let block = ROWS * alpha.len();
    let run = |(i, out): (usize, &mut [MaybeUninit<f32>])| {
        norm_rows(&x[i * block..][..out.len()], alpha, eps, out);
    };
    if x.len() < PARALLEL_MIN_VALUES {
        out.chunks_mut(block).enumerate().for_each(run);
    } else {
        out.par_chunks_mut(block).enumerate().for_each(run);
    }
}

/// `sum = x + delta`, then `out` = [`rms_norm`] of `sum`: a residual branch added to the stream
/// and the next sublayer's input normalized, in one pass.
///
/// # Panics
/// As for [`rms_norm`], and if `delta` or `sum` is not as long as `x`.
pub fn add_rms_norm(
    x: &[f32],
    delta: &[f32],
    alpha: &[f32],
    eps: f32,
    sum: &mut [f32],
    out: &mut [f32],
) {
    add_rms_norm_uninit(x, delta, alpha, eps, as_uninit(sum), as_uninit(out));
}

/// [`add_rms_norm`] into memory that holds no values yet, all of which it writes.
///
/// # Panics
/// As for [`add_rms_norm`].
pub fn add_rms_norm_uninit(
    x: &[f32],
    delta: &[f32],
    alpha: &[f32],
    eps: f32,
    sum: &mut [MaybeUninit<f32>],
    out: &mut [MaybeUninit<f32>],
) {
    check(x.len(), out.len(), alpha.len());
    assert!(
        delta.len() == x.len() && sum.len() == x.len(),
        "x is {}, delta {} and sum {} values",
        x.len(),
        delta.len(),
        sum.len()
    );
    let block = ROWS * alpha.len();
    let run = |(i, (sum, out)): (usize, (Unwritten<'_>, Unwritten<'_>))| {
        let values = i * block..i * block + sum.len();
        for ((s, &a), &b) in sum.iter_mut().zip(&x[values.clone()]).zip(&delta[values]) {
            s.write(a + b);
        }
        // SAFETY: every value of `sum` was written just above.
        norm_rows(unsafe { assume_init(sum) }, alpha, eps, out);
    };
    if x.len() < PARALLEL_MIN_VALUES {
        let blocks = sum.chunks_mut(block).zip(out.chunks_mut(block));
        blocks.enumerate().for_each(run);
    } else {
        let blocks = sum.par_chunks_mut(block).zip(out.par_chunks_mut(block));
        blocks.enumerate().for_each(run);
    }
}

fn check(x: usize, out: usize, width: usize) {
    assert!(
        width > 0 && x.is_multiple_of(width) && out == x,
        "x is {x} and out {out} values, for rows of {width}"
    );
}

/// Normalizes the rows of `x` (at most [`ROWS`]) into `out`.
fn norm_rows(x: &[f32], alpha: &[f32], eps: f32, out: &mut [MaybeUninit<f32>]) {
    let width = alpha.len();
    let rows = x.len() / width;
    let mut sums = [0f32; ROWS];
    if rows == ROWS {
        // The eight chains side by side: the same additions, in the same order, per row.
        for c in 0..width {
            for (r, sum) in sums.iter_mut().enumerate() {
                let v = x[r * width + c];
                *sum += v * v;
            }
        }
    } else {
        for (sum, row) in sums.iter_mut().zip(x.chunks_exact(width)) {
            for &v in row {
                *sum += v * v;
            }
        }
    }
    for ((row, out), sum) in x
        .chunks_exact(width)
        .zip(out.chunks_exact_mut(width))
        .zip(sums)
    {
        let m = (sum / width as f32 + eps).sqrt();
        for ((o, &v), &a) in out.iter_mut().zip(row).zip(alpha) {
            o.write(v / m * a);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{add_rms_norm, rms_norm};

    /// candle's row, written as candle writes it.
    fn candle_row(x: &[f32], alpha: &[f32], eps: f32) -> Vec<f32> {
        let sum2 = x.iter().map(|&v| v * v).sum::<f32>();
        let m = (sum2 / x.len() as f32 + eps).sqrt();
        x.iter().zip(alpha).map(|(&v, &a)| v / m * a).collect()
    }

    fn values(n: usize, seed: usize) -> Vec<f32> {
        (0..n)
            .map(|i| (((i + seed) * 7919) % 4001) as f32 / 100.0 - 20.0)
            .collect()
    }

    /// Each row comes out as candle's, to the bit, for one row, a block of eight and a
    /// remainder, serial and split between threads.
    #[test]
    fn each_row_is_candle_s_to_the_bit() {
        let eps = 1e-6;
        for (rows, width) in [(1, 896), (3, 64), (8, 896), (29, 896), (8 * 40 + 5, 64)] {
            let alpha = values(width, 3);
            let x = values(rows * width, 11);
            let delta = values(rows * width, 17);
            let mut out = vec![f32::NAN; rows * width];
            rms_norm(&x, &alpha, eps, &mut out);
            let mut sum = vec![f32::NAN; rows * width];
            let mut added = vec![f32::NAN; rows * width];
            add_rms_norm(&x, &delta, &alpha, eps, &mut sum, &mut added);
            for r in 0..rows {
                let row = r * width..(r + 1) * width;
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                let want = candle_row(&x[row.clone()], &alpha, eps);
                assert_eq!(
                    bits(&out[row.clone()]),
                    bits(&want),
                    "{rows}x{width}: row {r}"
                );
                let want_sum: Vec<f32> = x[row.clone()]
                    .iter()
                    .zip(&delta[row.clone()])
                    .map(|(a, b)| a + b)
                    .collect();
                assert_eq!(bits(&sum[row.clone()]), bits(&want_sum), "sum of row {r}");
                let want = candle_row(&want_sum, &alpha, eps);
                assert_eq!(
                    bits(&added[row]),
                    bits(&want),
                    "{rows}x{width}: added row {r}"
                );
            }
        }
    }

    #[test]
    #[should_panic(expected = "for rows of 4")]
    fn a_partial_row_is_refused() {
        rms_norm(&[0.0; 6], &[1.0; 4], 1e-6, &mut [0.0; 6]);
    }
}

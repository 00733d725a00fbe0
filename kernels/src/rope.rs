//! Rotary position embedding of a layer's query or key heads, taken straight from the q/k/v
//! projection's output rows and written head-major, as attention reads them.
//!
//! candle took three passes for it: a copy to make the projection's part contiguous, a
//! transposing copy to put the heads first, and its `rope`, one value at a time. For a
//! 2048-token prompt through Qwen2.5-0.5B its `rope` alone was about 5% of the prompt's time
//! (2-core Intel Xeon VM, `perf`). Here one pass reads each row's heads where the projection
//! wrote them and writes each rotated head to its place, eight or sixteen values to a register.
//! Each value is computed as candle computes it, `x₁·cos − x₂·sin` and `x₁·sin + x₂·cos`
//! with every product rounded on its own (no fused multiply-add), so the results are the same
//! bits.

use std::mem::MaybeUninit;

use rayon::prelude::*;

/// How a head's dimensions pair up for the rotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RopePairs {
    /// Dimension `i` with `i + dim / 2` (GPT-NeoX's, Qwen's; candle's `rope`).
    Halves,
    /// Dimension `2i` with `2i + 1` (the original's, GGUF Llama's; candle's `rope_i`).
    Adjacent,
}

/// Heads below this many values in all are rotated on the calling thread (a decoded token's):
/// handing them to the pool costs more than the rotation.
const PARALLEL_MIN_VALUES: usize = 16 * 1024;

/// The rows of one part (the queries or the keys) of a q/k/v projection's output: row `t`'s
/// head `h` is `values[t · row_stride + h · dim ..][..dim]`.
#[derive(Debug, Clone, Copy)]
pub struct HeadRows<'a> {
    pub values: &'a [f32],
    pub row_stride: usize,
    pub rows: usize,
    pub heads: usize,
    pub dim: usize,
}

/// Rotates every head of `part` by its row's position and writes it head-major:
/// `out[(h · rows + t) · dim + i]`, every value of `out` (which need hold none yet). Row `t`'s
/// angles are `cos[t · dim / 2 ..][..dim / 2]` and `sin` alike.
///
/// # Panics
/// If `dim` is odd or 0, `part.values` does not hold its rows, the tables are not
/// `rows · dim / 2` long, or `out` is not `heads · rows · dim`.
pub fn rotate_heads(
    part: HeadRows<'_>,
    cos: &[f32],
    sin: &[f32],
    pairs: RopePairs,
    out: &mut [MaybeUninit<f32>],
) {
    let HeadRows {
        values,
        row_stride,
        rows,
        heads,
        dim,
    } = part;
    let half = dim / 2;
    assert!(dim > 0 && dim.is_multiple_of(2), "head size {dim}");
    assert!(
        rows == 0 || (rows - 1) * row_stride + heads * dim <= values.len(),
        "{} values for {rows} rows of {heads} heads of {dim}, {row_stride} apart",
        values.len()
    );
    assert!(
        cos.len() == rows * half && sin.len() == rows * half,
        "tables"
    );
    assert_eq!(out.len(), heads * rows * dim, "out");
    if rows == 0 || heads == 0 {
        return;
    }
    let head = |h: usize, out: &mut [MaybeUninit<f32>]| {
        for (t, out) in out.chunks_exact_mut(dim).enumerate() {
            let x = &values[t * row_stride + h * dim..][..dim];
            let (cos, sin) = (&cos[t * half..][..half], &sin[t * half..][..half]);
            match pairs {
                RopePairs::Halves => rotate_halves(x, cos, sin, out),
                RopePairs::Adjacent => rotate_adjacent(x, cos, sin, out),
            }
        }
    };
    if out.len() < PARALLEL_MIN_VALUES {
        for (h, out) in out.chunks_exact_mut(rows * dim).enumerate() {
            head(h, out);
        }
    } else {
        out.par_chunks_exact_mut(rows * dim)
            .enumerate()
            .for_each(|(h, out)| head(h, out));
    }
}

/// One head, dimension `i` paired with `i + half`.
#[inline]
fn rotate_halves(x: &[f32], cos: &[f32], sin: &[f32], out: &mut [MaybeUninit<f32>]) {
    let half = cos.len();
    let (x1, x2) = x.split_at(half);
    let (o1, o2) = out.split_at_mut(half);
    for i in 0..half {
        o1[i].write(x1[i] * cos[i] - x2[i] * sin[i]);
    }
    for i in 0..half {
        o2[i].write(x1[i] * sin[i] + x2[i] * cos[i]);
    }
}

/// One head, dimension `2i` paired with `2i + 1`.
#[inline]
fn rotate_adjacent(x: &[f32], cos: &[f32], sin: &[f32], out: &mut [MaybeUninit<f32>]) {
    for (((x, out), &c), &s) in x
        .chunks_exact(2)
        .zip(out.chunks_exact_mut(2))
        .zip(cos)
        .zip(sin)
    {
        out[0].write(x[0] * c - x[1] * s);
        out[1].write(x[0] * s + x[1] * c);
    }
}

#[cfg(test)]
mod tests {
    use super::{HeadRows, RopePairs, rotate_heads};

    /// The rotation written out for one value, as candle's `rope` and `rope_i` compute it.
    fn reference(part: HeadRows<'_>, cos: &[f32], sin: &[f32], pairs: RopePairs) -> Vec<f32> {
        let (half, dim) = (part.dim / 2, part.dim);
        let mut out = vec![0f32; part.heads * part.rows * dim];
        for h in 0..part.heads {
            for t in 0..part.rows {
                let x = |i: usize| part.values[t * part.row_stride + h * dim + i];
                let at = |i: usize| (h * part.rows + t) * dim + i;
                for i in 0..half {
                    let (c, s) = (cos[t * half + i], sin[t * half + i]);
                    let (a, b) = match pairs {
                        RopePairs::Halves => (i, i + half),
                        RopePairs::Adjacent => (2 * i, 2 * i + 1),
                    };
                    out[at(a)] = x(a) * c - x(b) * s;
                    out[at(b)] = x(a) * s + x(b) * c;
                }
            }
        }
        out
    }

    /// A decoded token's heads and a prompt chunk's (on the pool), each pairing, with the
    /// part starting inside its rows (the keys after the queries): the reference's bits.
    #[test]
    fn every_head_comes_out_rotated_and_head_major() {
        let mut seed = 0x9e37_79b9u32;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            (seed % 2001) as f32 / 250.0 - 4.0
        };
        for (rows, heads, dim) in [(1, 14, 64), (3, 2, 8), (256, 14, 64), (33, 2, 128)] {
            for pairs in [RopePairs::Halves, RopePairs::Adjacent] {
                let (first, row_stride) = (5 * dim, (heads + 7) * dim);
                let values: Vec<f32> = (0..rows * row_stride).map(|_| next()).collect();
                let table: Vec<f32> = (0..rows * dim).map(|_| next() / 4.0).collect();
                let (cos, sin) = table.split_at(rows * dim / 2);
                let part = HeadRows {
                    values: &values[first..],
                    row_stride,
                    rows,
                    heads,
                    dim,
                };
                let mut out = vec![f32::NAN; heads * rows * dim];
                rotate_heads(part, cos, sin, pairs, crate::uninit::as_uninit(&mut out));
                let want = reference(part, cos, sin, pairs);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert!(bits(&out) == bits(&want), "{rows}x{heads}x{dim} {pairs:?}");
            }
        }
    }

    #[test]
    #[should_panic(expected = "values for")]
    fn rows_past_the_values_are_refused() {
        let values = vec![0f32; 100];
        let part = HeadRows {
            values: &values,
            row_stride: 64,
            rows: 2,
            heads: 1,
            dim: 64,
        };
        let mut out = [0.0; 128];
        let out = crate::uninit::as_uninit(&mut out);
        rotate_heads(part, &[0.0; 64], &[0.0; 64], RopePairs::Halves, out);
    }
}

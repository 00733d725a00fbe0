//! Causal attention over a preallocated f32 KV cache, read in place.
//!
//! The generic path (scores as a tensor, an additive mask, softmax, a second matmul) writes and
//! rereads a `queries × keys` matrix per head and pays for a fresh allocation each time; at a
//! depth of 4k that is most of a prefill chunk's time and most of a decoded token's. This
//! kernel streams the keys in blocks with an online softmax instead (the flash-attention
//! recurrence): each query row keeps a running maximum, sum and weighted value sum, and the
//! block of keys and values it reads stays in L1 for the next query rows of the same head.
//! The causal mask is a loop bound, not a tensor.

use std::fmt;

use rayon::prelude::*;

/// Query rows per task: they share every key block they read.
const QUERY_BLOCK: usize = 16;
/// Keys per block: 64 keys and values of 64 dims are 32 KiB, about an L1 data cache.
const KEY_BLOCK: usize = 64;

/// The sizes of one attention call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttentionShape {
    /// Query heads.
    pub heads: usize,
    /// Key/value heads; each serves `heads / kv_heads` query heads (grouped-query attention).
    pub kv_heads: usize,
    pub head_dim: usize,
    /// New tokens, at positions `offset..offset + queries`.
    pub queries: usize,
    /// Tokens already in the cache before the new ones.
    pub offset: usize,
    /// Positions allocated per KV head in the cache (its row stride), at least
    /// `offset + queries`.
    pub capacity: usize,
}

/// A call whose buffers or sizes do not fit together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeError(String);

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "attention: {}", self.0)
    }
}

impl std::error::Error for ShapeError {}

impl AttentionShape {
    fn check(&self, q: usize, k: usize, v: usize, out: usize) -> Result<(), ShapeError> {
        let fail = |what: String| Err(ShapeError(what));
        if self.heads == 0 || self.kv_heads == 0 || self.head_dim == 0 {
            return fail(format!("empty heads or head_dim in {self:?}"));
        }
        if !self.heads.is_multiple_of(self.kv_heads) {
            return fail(format!(
                "{} query heads do not divide into {} KV heads",
                self.heads, self.kv_heads
            ));
        }
        if self.offset + self.queries > self.capacity {
            return fail(format!(
                "{} cached + {} new tokens exceed the cache's {} positions",
                self.offset, self.queries, self.capacity
            ));
        }
        let rows = self.queries * self.heads * self.head_dim;
        let cache = self.kv_heads * self.capacity * self.head_dim;
        if q != rows || out != rows {
            return fail(format!("q is {q} and out {out} values, {rows} expected"));
        }
        if k != cache || v != cache {
            return fail(format!("k is {k} and v {v} values, {cache} expected"));
        }
        Ok(())
    }
}

/// `out = softmax(q kᵀ / √d + causal mask) v` for every query head.
///
/// - `q`: `(heads, queries, head_dim)`, row-major, already rotated.
/// - `k`, `v`: `(kv_heads, capacity, head_dim)`, with the new tokens already written at
///   `offset..offset + queries`. Query `i` sees keys `0..=offset + i`.
/// - `out`: `(queries, heads, head_dim)`, token-major, ready for the output projection.
///
/// Runs on the rayon pool, split by head and block of query rows.
pub fn causal_attention(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    shape: AttentionShape,
    out: &mut [f32],
) -> Result<(), ShapeError> {
    shape.check(q.len(), k.len(), v.len(), out.len())?;
    let blocks = shape.queries.div_ceil(QUERY_BLOCK);
    let out_ptr = OutPtr(out.as_mut_ptr());
    (0..shape.heads * blocks).into_par_iter().for_each(|task| {
        let (head, block) = (task / blocks, task % blocks);
        let rows = block * QUERY_BLOCK..shape.queries.min((block + 1) * QUERY_BLOCK);
        let task = Task {
            q,
            k,
            v,
            shape,
            head,
            rows,
        };
        // SAFETY: each task writes only `(row, head)` slots of its own rows and head, so no two
        // tasks write the same element, and `out` outlives the parallel loop.
        unsafe { task.run(out_ptr) }
    });
    Ok(())
}

/// The output pointer, shared by the tasks (each writes disjoint elements).
#[derive(Clone, Copy)]
struct OutPtr(*mut f32);
// SAFETY: see `causal_attention`: tasks write disjoint elements and the loop joins them.
unsafe impl Send for OutPtr {}
// SAFETY: as for `Send`.
unsafe impl Sync for OutPtr {}

/// One head's attention for a block of query rows.
struct Task<'a> {
    q: &'a [f32],
    k: &'a [f32],
    v: &'a [f32],
    shape: AttentionShape,
    head: usize,
    rows: std::ops::Range<usize>,
}

impl Task<'_> {
    /// # Safety
    /// `out` points to `queries × heads × head_dim` f32 whose `(row, self.head)` slots for
    /// `self.rows` no other thread touches.
    unsafe fn run(&self, out: OutPtr) {
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has both features; `out` as for this function.
            return unsafe { self.run_avx2(out) };
        }
        // SAFETY: forwarded.
        unsafe { self.run_portable(out) }
    }

    /// The same code compiled for AVX2 + FMA, so that the lane loops below vectorize to them.
    ///
    /// # Safety
    /// As for [`Self::run`], and the CPU has AVX2 and FMA.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn run_avx2(&self, out: OutPtr) {
        // SAFETY: forwarded.
        unsafe { self.run_portable(out) }
    }

    /// # Safety
    /// As for [`Self::run`].
    #[inline(always)]
    unsafe fn run_portable(&self, out: OutPtr) {
        let s = self.shape;
        let dim = s.head_dim;
        let kv_head = self.head / (s.heads / s.kv_heads);
        let cache = kv_head * s.capacity * dim..(kv_head + 1) * s.capacity * dim;
        let (keys, values) = (&self.k[cache.clone()], &self.v[cache]);
        let scale = 1.0 / (dim as f32).sqrt();
        let n = self.rows.len();
        let mut max = vec![f32::NEG_INFINITY; n];
        let mut sum = vec![0f32; n];
        let mut acc = vec![0f32; n * dim];
        let mut scores = [0f32; KEY_BLOCK];
        // Keys the last row sees; earlier rows stop sooner.
        let visible = s.offset + self.rows.end;
        for first in (0..visible).step_by(KEY_BLOCK) {
            for (r, row) in self.rows.clone().enumerate() {
                let end = visible.min(first + KEY_BLOCK).min(s.offset + row + 1);
                if end <= first {
                    continue;
                }
                let query = &self.q[(self.head * s.queries + row) * dim..][..dim];
                let scores = &mut scores[..end - first];
                for (j, score) in scores.iter_mut().enumerate() {
                    *score = dot(query, &keys[(first + j) * dim..][..dim]) * scale;
                }
                let block_max = scores.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
                let new_max = max[r].max(block_max);
                // exp(-inf) = 0 on a row's first block: nothing to rescale yet.
                let correction = (max[r] - new_max).exp();
                max[r] = new_max;
                let acc = &mut acc[r * dim..][..dim];
                if correction != 1.0 {
                    acc.iter_mut().for_each(|a| *a *= correction);
                }
                exp_shifted(scores, new_max);
                sum[r] = sum[r] * correction + scores.iter().sum::<f32>();
                for (j, &p) in scores.iter().enumerate() {
                    axpy(p, &values[(first + j) * dim..][..dim], acc);
                }
            }
        }
        for (r, row) in self.rows.clone().enumerate() {
            let inverse = 1.0 / sum[r];
            let at = (row * s.heads + self.head) * dim;
            for (d, a) in acc[r * dim..][..dim].iter().enumerate() {
                // SAFETY: `(row, head)` is this task's slot, inside `out` (see `run`).
                unsafe { *out.0.add(at + d) = a * inverse };
            }
        }
    }
}

/// `Σ a·b`, in eight lanes so that it vectorizes.
#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a8
        .remainder()
        .iter()
        .zip(b8.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a8.zip(b8) {
        for l in 0..8 {
            lanes[l] = x[l].mul_add(y[l], lanes[l]);
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// `acc += p · v`.
#[inline(always)]
fn axpy(p: f32, v: &[f32], acc: &mut [f32]) {
    for (a, &x) in acc.iter_mut().zip(v) {
        *a = p.mul_add(x, *a);
    }
}

/// `x = exp(x - shift)` for `x ≤ shift`, to within 2 ulp, in a form that vectorizes: `2^n ·
/// p(r)` with `n = round(x·log2 e)` and a degree-6 polynomial for `e^r` on `|r| ≤ ln2/2`
/// (Cephes' `expf` coefficients). Inputs below -87 give about 1e-38 instead of a denormal.
#[inline(always)]
fn exp_shifted(xs: &mut [f32], shift: f32) {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    // ln 2 split in two so that `n · LN2_HI` is exact.
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    const P: [f32; 6] = [
        1.987_569_1e-4,
        1.398_199_9e-3,
        8.333_452e-3,
        4.166_579_6e-2,
        0.166_666_65,
        0.5,
    ];
    for x in xs.iter_mut() {
        let t = (*x - shift).max(-87.0);
        let n = (t * LOG2E + 0.5).floor();
        let r = t - n * LN2_HI - n * LN2_LO;
        let mut p = P[0];
        for c in &P[1..] {
            p = p.mul_add(r, *c);
        }
        let e = (p * r).mul_add(r, r) + 1.0;
        let pow2 = f32::from_bits(((n as i32 + 127) as u32) << 23);
        *x = e * pow2;
    }
}

#[cfg(test)]
#[path = "attention_tests.rs"]
mod tests;

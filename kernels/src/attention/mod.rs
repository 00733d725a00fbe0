//! Causal attention over a preallocated KV cache, in f32 or f16, read in place.
//!
//! The generic path (scores as a tensor, an additive mask, softmax, a second matmul) writes and
//! rereads a `queries × keys` matrix per head and pays for a fresh allocation each time; at a
//! depth of 4k that is most of a prefill chunk's time and most of a decoded token's. This
//! kernel streams the keys in blocks with an online softmax instead (the flash-attention
//! recurrence): each query row keeps a running maximum, sum and weighted value sum. A task
//! takes one KV head with every query head that shares it (grouped-query attention) and a
//! block of query rows, so each block of keys and values is read from memory once and then
//! served from L1 to all of them: splitting by query head instead made every KV head be read
//! once per query head, seven times for Qwen2.5-0.5B, which cost a third of a decoded token's
//! time at a depth of 4k. The causal mask is a loop bound, not a tensor.
//!
//! Decoding has one query row, so one task per KV head: two for Qwen2.5, which left every
//! other core idle. Where there are fewer tasks than threads, each task's key range is cut into
//! parts that run in parallel, and their running states are merged (split-K, as flash-decoding
//! does); the merge is exact up to rounding.
//!
//! With AVX2 and FMA, and a head size that is a multiple of 8, each task runs as small matrix
//! products (`tiled.rs`): up to six query vectors share every key and value loaded, and the
//! softmax works on eight scores to a register. With AVX-512F too, and a head size that is a
//! multiple of 16, seven query vectors share them, sixteen scores to a register
//! (`tiled512.rs`). Otherwise the portable code takes one query vector at a time. The keys
//! are held in blocks, dimension-major, as the tiled kernels read them (`keys.rs`). An f16
//! cache is widened as it is read, or once per block for a prompt chunk (see `element.rs`
//! for why the cache is f16).

use std::fmt;

use rayon::prelude::*;

use crate::OutPtr;
use aligned::Lines;
pub use element::KvElement;
use exp::exp_shifted;
pub use keys::{CacheShape, store_keys};

/// Query positions per task (times the query heads of its KV head): they share every key
/// block they read.
const QUERY_BLOCK: usize = 16;
/// Keys per block: 64 keys and values of 64 dims are 32 KiB, about an L1 data cache. The key
/// cache is held in blocks of this many positions (`keys.rs`), so its capacity is a multiple.
pub const KEY_BLOCK: usize = 64;

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
    /// Positions allocated per KV head in the cache, at least `offset + queries` and a
    /// multiple of [`KEY_BLOCK`].
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
    /// The sizes of the key cache this attention reads.
    pub fn cache(&self) -> CacheShape {
        CacheShape {
            kv_heads: self.kv_heads,
            head_dim: self.head_dim,
            capacity: self.capacity,
        }
    }

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
        // Head counts and sizes come from the model file's header. A product that wraps
        // (release builds do not trap) could match empty buffers and send the unchecked
        // kernel past them, so every sum and product here is checked.
        let end = self.offset.checked_add(self.queries);
        if end.is_none_or(|end| end > self.capacity) {
            return fail(format!(
                "{} cached + {} new tokens exceed the cache's {} positions",
                self.offset, self.queries, self.capacity
            ));
        }
        let cache = self.cache().elements()?;
        let Some(rows) = self
            .queries
            .checked_mul(self.heads)
            .and_then(|n| n.checked_mul(self.head_dim))
        else {
            return fail(format!("the buffer sizes of {self:?} overflow"));
        };
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
/// - `k`: `kv_heads × capacity` keys of `head_dim`, f32 or f16, in blocks as [`store_keys`]
///   writes them; `v`: `(kv_heads, capacity, head_dim)`, row-major, of the same type. The new
///   tokens are already written at `offset..offset + queries`. Query `i` sees keys
///   `0..=offset + i`.
/// - `out`: `(queries, heads, head_dim)`, token-major, ready for the output projection.
///
/// Runs on the rayon pool, split by KV head and block of query rows, and by key range when
/// that leaves threads idle (decoding).
pub fn causal_attention<E: KvElement>(
    q: &[f32],
    k: &[E],
    v: &[E],
    shape: AttentionShape,
    out: &mut [f32],
) -> Result<(), ShapeError> {
    attention_on(
        Simd::Detect,
        rayon::current_num_threads(),
        q,
        k,
        v,
        shape,
        out,
    )
}

/// Which code [`causal_attention`] runs; tests force the slower ones too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Simd {
    /// The fastest this CPU has.
    Detect,
    /// No AVX-512, even where the CPU has it.
    #[cfg_attr(not(test), allow(dead_code))]
    Avx2,
    #[cfg_attr(not(test), allow(dead_code))]
    Portable,
}

impl Simd {
    /// Whether the tiled kernel takes its AVX-512 products for heads of `head_dim`.
    #[cfg(target_arch = "x86_64")]
    fn wide(self, head_dim: usize) -> bool {
        self == Simd::Detect && head_dim.is_multiple_of(16) && is_x86_feature_detected!("avx512f")
    }
}

fn attention_on<E: KvElement>(
    simd: Simd,
    threads: usize,
    q: &[f32],
    k: &[E],
    v: &[E],
    shape: AttentionShape,
    out: &mut [f32],
) -> Result<(), ShapeError> {
    shape.check(q.len(), k.len(), v.len(), out.len())?;
    let blocks = shape.queries.div_ceil(QUERY_BLOCK);
    let tasks = shape.kv_heads * blocks;
    let task = |task: usize| {
        let (kv_head, block) = (task / blocks, task % blocks);
        Task {
            q,
            k,
            v,
            shape,
            kv_head,
            rows: block * QUERY_BLOCK..shape.queries.min((block + 1) * QUERY_BLOCK),
        }
    };
    let out_ptr = OutPtr(out.as_mut_ptr());
    let splits = key_splits(tasks, shape.offset + shape.queries, threads);
    if splits == 1 {
        (0..tasks).into_par_iter().for_each(|i| {
            let task = task(i);
            let mut state = task.state();
            task.run(simd, 0..task.visible(), &mut state);
            // SAFETY: each task writes only `(row, head)` slots of its own rows and heads, so
            // no two tasks write the same element, and `out` outlives the parallel loop.
            unsafe { task.write(&state, out_ptr) };
        });
        return Ok(());
    }
    let parts: Vec<State> = (0..tasks * splits)
        .into_par_iter()
        .map(|i| {
            let task = task(i / splits);
            let mut state = task.state();
            let keys = split_keys(task.visible(), splits, i % splits);
            task.run(simd, keys, &mut state);
            state
        })
        .collect();
    parts.par_chunks(splits).enumerate().for_each(|(i, parts)| {
        let state = State::merged(parts, shape.head_dim);
        // SAFETY: as above.
        unsafe { task(i).write(&state, out_ptr) };
    });
    Ok(())
}

/// Keys per part, at least, when a key range is split between threads: below this the
/// merge and the extra task cost about what the split saves.
const MIN_SPLIT_KEYS: usize = 256;

/// Into how many parts to cut each task's key range so that every thread has work. Decoding
/// makes one task per KV head, two for Qwen2.5, which left every other core idle during
/// attention; the parts run in parallel and their softmax states merge exactly (up to
/// rounding). A pool with enough tasks, or a short range, is not split.
fn key_splits(tasks: usize, keys: usize, threads: usize) -> usize {
    if tasks >= threads {
        return 1;
    }
    threads.div_ceil(tasks).min(keys / MIN_SPLIT_KEYS).max(1)
}

/// Part `part` of `splits` of the keys `0..visible`, cut at key blocks (the last parts may be
/// empty).
fn split_keys(visible: usize, splits: usize, part: usize) -> std::ops::Range<usize> {
    let per = visible.div_ceil(splits).next_multiple_of(KEY_BLOCK);
    visible.min(part * per)..visible.min((part + 1) * per)
}

/// The online softmax of every (query row, query head) of one task over the keys it has read:
/// the running maximum score, the sum of `exp(score - max)`, and the value rows weighted by
/// those, not yet divided by the sum.
struct State {
    max: Vec<f32>,
    sum: Vec<f32>,
    acc: Lines,
}

impl State {
    /// The state of `parts` read one after another: the same softmax over the union of their
    /// keys. Every row sees key 0, so some part has a finite maximum for each; a part that saw
    /// none of a row's keys weighs nothing.
    fn merged(parts: &[State], dim: usize) -> State {
        let n = parts[0].max.len();
        let mut max = vec![f32::NEG_INFINITY; n];
        for part in parts {
            for (m, &p) in max.iter_mut().zip(&part.max) {
                *m = m.max(p);
            }
        }
        let mut sum = vec![0f32; n];
        let mut acc = Lines::zeroed(n * dim);
        for part in parts {
            for state in 0..n {
                if part.max[state] == f32::NEG_INFINITY {
                    continue;
                }
                let weight = (part.max[state] - max[state]).exp();
                sum[state] += part.sum[state] * weight;
                let from = &part.acc[state * dim..][..dim];
                for (a, &x) in acc[state * dim..][..dim].iter_mut().zip(from) {
                    *a = weight.mul_add(x, *a);
                }
            }
        }
        State { max, sum, acc }
    }
}

/// Attention of the query heads of one KV head, for a block of query rows.
struct Task<'a, E> {
    q: &'a [f32],
    k: &'a [E],
    v: &'a [E],
    shape: AttentionShape,
    kv_head: usize,
    rows: std::ops::Range<usize>,
}

impl<E: KvElement> Task<'_, E> {
    /// Keys the last row sees; earlier rows stop sooner.
    fn visible(&self) -> usize {
        self.shape.offset + self.rows.end
    }

    /// A state that has read no keys.
    fn state(&self) -> State {
        let n = self.rows.len() * (self.shape.heads / self.shape.kv_heads);
        State {
            max: vec![f32::NEG_INFINITY; n],
            sum: vec![0f32; n],
            acc: Lines::zeroed(n * self.shape.head_dim),
        }
    }

    /// Reads the keys `keys` (a range that starts on a key block) into `state`, with the SIMD
    /// path where the CPU has it.
    fn run(&self, simd: Simd, keys: std::ops::Range<usize>, state: &mut State) {
        #[cfg(target_arch = "x86_64")]
        if simd != Simd::Portable
            && is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma")
        {
            // SAFETY (both): the CPU has the features each asks for, AVX-512F where `wide`
            // says so. F16C came with AVX2 on every CPU that has both; a CPU without it takes
            // the portable path.
            if self.shape.head_dim.is_multiple_of(8) && is_x86_feature_detected!("f16c") {
                let wide = simd.wide(self.shape.head_dim);
                return unsafe { self.run_tiled(keys, state, wide) };
            }
            return unsafe { self.run_avx2(keys, state) };
        }
        self.run_portable(keys, state)
    }

    /// The portable code compiled for AVX2 + FMA, so that its lane loops vectorize to them:
    /// for head sizes the tiled kernel does not take.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn run_avx2(&self, keys: std::ops::Range<usize>, state: &mut State) {
        self.run_portable(keys, state)
    }

    /// One query vector at a time, in plain Rust.
    #[inline(always)]
    fn run_portable(&self, keys: std::ops::Range<usize>, state: &mut State) {
        // The common head sizes get their own copy with the size a constant, so the per-key
        // loops unroll and the running output row stays in registers.
        match self.shape.head_dim {
            64 => self.run_dim::<64>(keys, state),
            128 => self.run_dim::<128>(keys, state),
            _ => self.run_dim::<0>(keys, state),
        }
    }

    /// `D` is the head size, or 0 for "read it from the shape".
    #[inline(always)]
    fn run_dim<const D: usize>(&self, keys: std::ops::Range<usize>, state: &mut State) {
        let s = self.shape;
        let dim = if D == 0 { s.head_dim } else { D };
        let groups = s.heads / s.kv_heads;
        let cache = self.kv_head * s.capacity * dim..(self.kv_head + 1) * s.capacity * dim;
        let (key_blocks, values) = (&self.k[cache.clone()], &self.v[cache]);
        let scale = 1.0 / (dim as f32).sqrt();
        let State { max, sum, acc } = state;
        let mut scores = [0f32; KEY_BLOCK];
        let (mut wide_keys, mut wide_values) = (Vec::new(), Vec::new());
        let last = keys.end.min(self.visible());
        for first in (keys.start..last).step_by(KEY_BLOCK) {
            let block_end = last.min(first + KEY_BLOCK);
            let block = &key_blocks[first * dim..][..KEY_BLOCK * dim];
            keys::block_rows(block, block_end - first, dim, &mut wide_keys);
            let key_block = &wide_keys[..];
            let value_block = E::as_f32(&values[first * dim..block_end * dim], &mut wide_values);
            for (r, row) in self.rows.clone().enumerate() {
                let end = block_end.min(s.offset + row + 1);
                if end <= first {
                    continue;
                }
                let block = &key_block[..(end - first) * dim];
                for g in 0..groups {
                    let head = self.kv_head * groups + g;
                    let state = r * groups + g;
                    let query = &self.q[(head * s.queries + row) * dim..][..dim];
                    let scores = &mut scores[..end - first];
                    key_scores(query, block, scale, scores);
                    let block_max = scores.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
                    let new_max = max[state].max(block_max);
                    // exp(-inf) = 0 on a row's first block: nothing to rescale yet.
                    let correction = (max[state] - new_max).exp();
                    max[state] = new_max;
                    exp_shifted(scores, new_max);
                    sum[state] = sum[state] * correction + scores.iter().sum::<f32>();
                    let acc = &mut acc[state * dim..][..dim];
                    let block_values = &value_block[..(end - first) * dim];
                    weighted_values::<D>(scores, block_values, correction, acc);
                }
            }
        }
    }

    /// Writes `state`'s outputs, divided by their sums, to this task's slots of `out`.
    ///
    /// # Safety
    /// `out` points to `queries × heads × head_dim` f32 whose `(row, head)` slots for
    /// `self.rows` and this KV head's query heads no other thread touches.
    unsafe fn write(&self, state: &State, out: OutPtr) {
        let s = self.shape;
        let (dim, groups) = (s.head_dim, s.heads / s.kv_heads);
        for (r, row) in self.rows.clone().enumerate() {
            for g in 0..groups {
                let at = r * groups + g;
                let inverse = 1.0 / state.sum[at];
                let to = (row * s.heads + self.kv_head * groups + g) * dim;
                for (d, a) in state.acc[at * dim..][..dim].iter().enumerate() {
                    // SAFETY: `(row, head)` is this task's slot, inside `out` (see above).
                    unsafe { *out.0.add(to + d) = a * inverse };
                }
            }
        }
    }
}

/// `scores[j] = scale · (query · key j)` for the consecutive keys of `keys`. Several keys at
/// a time, each with its own accumulators, so the multiply-adds of one key do not wait on
/// each other.
#[inline(always)]
fn key_scores(query: &[f32], keys: &[f32], scale: f32, scores: &mut [f32]) {
    let dim = query.len();
    let done = scores.len() / 4 * 4;
    let mut fours = scores.chunks_exact_mut(4);
    for (j, four) in (&mut fours).enumerate() {
        let k = &keys[4 * j * dim..][..4 * dim];
        let dots = dot4(
            query,
            [
                &k[..dim],
                &k[dim..][..dim],
                &k[2 * dim..][..dim],
                &k[3 * dim..],
            ],
        );
        for (score, dot) in four.iter_mut().zip(dots) {
            *score = dot * scale;
        }
    }
    for (j, score) in fours.into_remainder().iter_mut().enumerate() {
        *score = dot(query, &keys[(done + j) * dim..][..dim]) * scale;
    }
}

/// `acc = correction · acc + Σ_j p_j · value j`. With `D` known the row is kept in a local
/// array that the compiler holds in registers across all the block's values.
#[inline(always)]
fn weighted_values<const D: usize>(p: &[f32], values: &[f32], correction: f32, acc: &mut [f32]) {
    if D == 0 {
        if correction != 1.0 {
            acc.iter_mut().for_each(|a| *a *= correction);
        }
        for (j, &p) in p.iter().enumerate() {
            axpy(p, &values[j * acc.len()..][..acc.len()], acc);
        }
        return;
    }
    let mut row = [0f32; D];
    for (r, a) in row.iter_mut().zip(acc.iter()) {
        *r = a * correction;
    }
    for (&p, value) in p.iter().zip(values.chunks_exact(D)) {
        for (r, &x) in row.iter_mut().zip(value) {
            *r = p.mul_add(x, *r);
        }
    }
    acc.copy_from_slice(&row);
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

/// [`dot`] of `a` with four vectors at once.
#[inline(always)]
fn dot4(a: &[f32], bs: [&[f32]; 4]) -> [f32; 4] {
    let mut lanes = [[0f32; 8]; 4];
    let chunks = a.len() / 8 * 8;
    for c in (0..chunks).step_by(8) {
        let x = &a[c..c + 8];
        for (lanes, b) in lanes.iter_mut().zip(&bs) {
            let y = &b[c..c + 8];
            for l in 0..8 {
                lanes[l] = x[l].mul_add(y[l], lanes[l]);
            }
        }
    }
    let mut out = [0f32; 4];
    for ((o, lanes), b) in out.iter_mut().zip(&lanes).zip(&bs) {
        let tail: f32 = a[chunks..]
            .iter()
            .zip(&b[chunks..])
            .map(|(x, y)| x * y)
            .sum();
        *o = lanes.iter().sum::<f32>() + tail;
    }
    out
}

/// `acc += p · v`.
#[inline(always)]
fn axpy(p: f32, v: &[f32], acc: &mut [f32]) {
    for (a, &x) in acc.iter_mut().zip(v) {
        *a = p.mul_add(x, *a);
    }
}

mod aligned;
mod element;
mod exp;
mod keys;
#[cfg(target_arch = "x86_64")]
mod tiled;
#[cfg(target_arch = "x86_64")]
mod tiled512;

#[cfg(test)]
mod tests;

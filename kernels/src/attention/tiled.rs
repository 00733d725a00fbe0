//! Attention as small matrix products, with AVX2, FMA and F16C.
//!
//! The portable kernel takes one query vector at a time, so each key or value it loads feeds
//! one multiply-add, and each score ends in a sum across lanes. Here the query heads of one
//! row that share a KV head (seven for Qwen2.5-0.5B) go through together, up to [`QUERIES`] at
//! a time, and every key or value loaded feeds that many multiply-adds from registers. For the
//! scores, the cache holds each block of keys dimension-major (`keys.rs`), so that a register
//! holds one dimension of eight keys: the scores come out eight keys to a register, ready for
//! the softmax's vector max, exp and sum, with no sums across lanes. An f16 cache is widened
//! where the kernel loads from it, eight keys or values at a time; a prompt chunk's task,
//! which reads each block once per tile of states, widens the block once instead.

use std::arch::x86_64::*;
use std::ops::Range;

use super::element::Kind;
use super::exp::{exp_shifted_avx2, exp_shifted_avx512};
use super::{KEY_BLOCK, KvElement, State, Task};

/// The most query vectors that share each load: six queries × two key registers are twelve
/// accumulators, and with the loaded keys and a broadcast query they fit the sixteen registers.
const QUERIES: usize = 6;
/// Score rows a block's tile of states may need: the most states either kernel takes at once
/// ([`QUERIES`], or the AVX-512 kernel's `QUERIES`).
pub(super) const SCORE_ROWS: usize = 7;
/// One score row per state of a tile: `scores[n][j]` is state `n`'s score, then weight, of
/// key `j` of the block.
pub(super) type Scores = [[f32; KEY_BLOCK]; SCORE_ROWS];
const _: () = assert!(QUERIES <= SCORE_ROWS);
const LANES: usize = 8;
/// Keys per score tile: two registers.
const KEY_TILE: usize = 2 * LANES;
const _: () = assert!(KEY_BLOCK.is_multiple_of(KEY_TILE));
/// Dimensions summed in one run of multiply-adds before the run is added to the score. One
/// run over all 64 dimensions of Qwen2.5's heads rounds worse where its keys hold large
/// values: on the real model it moved logits by up to 0.39 against the portable kernel, whose
/// eight lanes each sum eight dimensions. Runs of eight cost 5–10% of the attention's speed
/// and gave the portable kernel's logits to the bit in the real-model reference test.
pub(super) const DIM_CHUNK: usize = 8;

/// How many of the `left` states still to fold into a block go through together.
///
/// Each state's score against a register of keys is a chain of multiply-adds, and a Zen 2 core
/// needs ten such chains in flight to keep its two FMA pipes busy (five cycles each). Tiles of
/// four states were eight chains; six are twelve, and their values' products, two registers of
/// dimensions per state, twelve too. On a 2-core Zen 2 VM (`examples/attention`, two runs of
/// each build in turn), decoding a token through the six query heads per KV head of
/// Qwen2.5-1.5B took 206–212 µs a layer at a depth of 4k against 264–273 in tiles of four and
/// two, and 813–860 against 1052–1094 at 16k; a prompt chunk's attention at 4k, in tiles of
/// six across rows, 2–4% less time. Seven states would need seventeen registers: in one
/// tile, with one spilled, Qwen2.5-0.5B's seven heads per KV head decoded no faster than in
/// tiles of four and three, and eight go as two fours rather than six and a tile of two (four
/// chains).
fn states_per_tile(left: usize) -> usize {
    match left {
        7 | 8 => 4,
        left => left.min(QUERIES),
    }
}

impl<E: KvElement> Task<'_, E> {
    /// [`Task::run`]'s work for a head size that is a multiple of 8.
    ///
    /// # Safety
    /// The CPU has AVX2, FMA and F16C, and AVX-512F too where `wide` says so: the blocks
    /// then go to its kernel (`tiled512.rs`).
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn run_tiled(&self, keys: Range<usize>, state: &mut State, wide: bool) {
        let s = self.shape;
        let dim = s.head_dim;
        assert!(dim.is_multiple_of(LANES), "head size {dim}");
        let groups = s.heads / s.kv_heads;
        let cache = self.kv_head * s.capacity * dim..(self.kv_head + 1) * s.capacity * dim;
        let (key_blocks, values) = (&self.k[cache.clone()], &self.v[cache]);
        let mut scores: Scores = [[0f32; KEY_BLOCK]; SCORE_ROWS];
        // A prompt chunk's task reads each block once per tile of states, so it widens the
        // block once into `f32_keys` and `f32_values`: widening in every tile instead made a
        // chunk's attention 9–10% slower (2-core Zen 4 VM, `examples/attention`, AVX-512).
        // Decoding reads each block once per token, from memory, and takes it as it is.
        let widen = E::KIND == Kind::F16 && self.rows.len() > 1;
        let (mut f32_keys, mut f32_values) = (Vec::new(), Vec::new());
        let last = keys.end.min(self.visible());
        // State `i` is query head `kv_head · groups + i % groups` of row `rows.start + i / groups`.
        let query = |i: usize| {
            let (row, head) = (
                self.rows.start + i / groups,
                self.kv_head * groups + i % groups,
            );
            &self.q[(head * s.queries + row) * dim..][..dim]
        };
        for first in (keys.start..last).step_by(KEY_BLOCK) {
            let block_end = last.min(first + KEY_BLOCK);
            // The cache's capacity is whole blocks, so the block is there whole; its keys
            // past `block_end` are scored and then left out.
            let block_keys = &key_blocks[first * dim..][..KEY_BLOCK * dim];
            let ahead = if block_end < last {
                [
                    &key_blocks[block_end * dim..][..KEY_BLOCK * dim],
                    &values[block_end * dim..last.min(block_end + KEY_BLOCK) * dim],
                ]
            } else {
                [&[][..], &[][..]]
            };
            let whole = self
                .rows
                .clone()
                .position(|row| s.offset + row + 1 >= block_end)
                .unwrap_or(self.rows.len());
            let values = &values[first * dim..block_end * dim];
            let rows = (first, whole);
            // SAFETY (both): this function's contract.
            if widen {
                let keys = E::as_f32(block_keys, &mut f32_keys);
                let values = E::as_f32(values, &mut f32_values);
                // A chunk works on each block for many tiles of states: asking for the next
                // one at once leaves it time to arrive.
                prefetch(ahead[0]);
                prefetch(ahead[1]);
                let ahead = [&[][..], &[][..]];
                unsafe {
                    self.attend_rows(
                        (keys, values, ahead),
                        rows,
                        &query,
                        state,
                        &mut scores,
                        wide,
                    )
                };
            } else {
                unsafe {
                    self.attend_rows(
                        (block_keys, values, ahead),
                        rows,
                        &query,
                        state,
                        &mut scores,
                        wide,
                    )
                };
            }
        }
    }

    /// Folds the block of keys that starts at key `first` into every state of the task:
    /// `keys` are its keys as the cache holds them, `values` its value rows, `ahead` the next
    /// block's keys and values to [`prefetch`] on the way, and the task's rows before `whole`
    /// are on its diagonal.
    ///
    /// # Safety
    /// As for [`Self::run_tiled`].
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn attend_rows<'q, F: KvElement>(
        &self,
        (keys, values, ahead): (&[F], &[F], [&[F]; 2]),
        (first, whole): (usize, usize),
        query: &impl Fn(usize) -> &'q [f32],
        state: &mut State,
        scores: &mut Scores,
        wide: bool,
    ) {
        let s = self.shape;
        let (dim, groups) = (s.head_dim, s.heads / s.kv_heads);
        let scale = 1.0 / (dim as f32).sqrt();
        // Only the first tile of states asks for the next block: one request per line.
        let mut ahead = Some(ahead);
        let mut block = |end: usize| Block {
            keys,
            values: &values[..(end - first) * dim],
            ahead: ahead.take().unwrap_or([&[], &[]]),
            count: end - first,
            dim,
            scale,
        };
        let mut attend = |block: Block<'_, F>, states: Range<usize>| {
            // SAFETY: the CPU has AVX2, FMA and F16C (this function's contract), and
            // AVX-512F where `wide` says so.
            unsafe {
                if wide {
                    block.attend_states_wide(states, query, state, scores)
                } else {
                    block.attend_states(states, query, state, scores)
                }
            }
        };
        // Rows on the block's diagonal see part of it, each its own part; the rows after
        // them see all of it, and their states, one run, are taken a tile at a time across
        // rows (up to six, or seven with AVX-512), so that seven heads per KV head need no
        // tile of three on AVX2.
        for r in 0..whole {
            let end = s.offset + self.rows.start + r + 1;
            if end > first {
                attend(block(end), r * groups..(r + 1) * groups);
            }
        }
        attend(
            block(first + values.len() / dim),
            whole * groups..self.rows.len() * groups,
        );
    }
}

/// Asks for `span` (part of the next block's keys or values) to be brought into L2 while the
/// current block is worked on; decoding spreads the requests over a block's score products
/// ([`Requests`]). Decoding reads each layer's keys and values once, from memory;
/// alone, the hardware prefetcher left decode attention at a depth of 4k twice as slow as from
/// cache (`examples/attention`, 2-core Zen 4 VM). Asking for the whole next block at a block's
/// start took that from 250 to 205 µs per layer; spreading the requests over the block's
/// key transpose, an eighth per eight keys, to 152–158 µs (180–194 the
/// whole-block way, runs taken in turn; 16k: 662–669 against 842–861), likely because a
/// burst of 256 lines is more misses than a core keeps in flight. Prefetching into L1 (T0)
/// made no difference.
#[inline]
fn prefetch<E>(span: &[E]) {
    let bytes = std::mem::size_of_val(span);
    let start = span.as_ptr().cast::<i8>();
    for line in (0..bytes).step_by(64) {
        // SAFETY: a prefetch is a hint that never faults; the address is inside `span` anyway.
        unsafe { _mm_prefetch::<_MM_HINT_T1>(start.wrapping_add(line)) };
    }
}

/// The next block's keys and values, asked for with [`prefetch`] an equal share of lines at a
/// time, each share where the last one ended. The shares' size is worked out once per tile
/// of states: found by two divisions for every run of eight dimensions, as the part of the
/// spans it was, they had cost a tenth of the decode attention on Qwen2.5-0.5B's heads
/// (2-core Zen 2 VM, `examples/attention 2 decode`, two runs of each build in turn: 162–164 →
/// 144–148 µs a layer at a depth of 4k; 1.5B's heads 209–213 → 193–195). A cursor of raw
/// addresses, not the spans split a share at a time and each share given to [`prefetch`]:
/// that form, with its bounds and its stepped range per share, took the 0.5B's heads back
/// to 160–163 µs (against 141–143, two runs each in turn).
pub(super) struct Requests {
    next: [*const i8; 2],
    end: [*const i8; 2],
    /// Bytes per share, whole lines.
    share: [usize; 2],
}

impl Requests {
    /// `spans` in `parts` shares.
    #[inline]
    pub(super) fn new<E>(spans: &[&[E]; 2], parts: usize) -> Self {
        let share = spans.map(|span| (size_of_val(span).div_ceil(parts)).next_multiple_of(64));
        let next = spans.map(|span| span.as_ptr().cast::<i8>());
        let end = [0, 1].map(|i| next[i].wrapping_add(size_of_val(spans[i])));
        Self { next, end, share }
    }

    /// Asks for the next share of each span.
    #[inline(always)]
    pub(super) fn ask_next(&mut self) {
        for i in 0..2 {
            let stop = self.next[i].wrapping_add(self.share[i]).min(self.end[i]);
            while self.next[i] < stop {
                // SAFETY: a prefetch is a hint that never faults; the address is in the span.
                unsafe { _mm_prefetch::<_MM_HINT_T1>(self.next[i]) };
                self.next[i] = self.next[i].wrapping_add(64);
            }
        }
    }
}

/// The keys of one block that a run of states sees (one row on the block's diagonal, or the
/// rows past it), with their values.
pub(super) struct Block<'a, E> {
    /// The block's keys as the cache holds them: dimension `d` of key `j` at
    /// `d · KEY_BLOCK + j` (`keys.rs`).
    pub(super) keys: &'a [E],
    /// Rows `0..count` of the block's values, as the cache holds them.
    pub(super) values: &'a [E],
    /// The next block's keys and values, to be asked for while this one is worked on; empty
    /// where another tile of states has asked already.
    pub(super) ahead: [&'a [E]; 2],
    /// Keys these states see in the block, at least 1.
    pub(super) count: usize,
    pub(super) dim: usize,
    pub(super) scale: f32,
}

impl<E: KvElement> Block<'_, E> {
    /// Folds the block into the states `states`, up to [`QUERIES`] at a time; `query(i)` is
    /// state `i`'s query vector.
    ///
    /// # Safety
    /// The CPU has AVX2, FMA and F16C.
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn attend_states<'q>(
        &self,
        states: Range<usize>,
        query: &impl Fn(usize) -> &'q [f32],
        state: &mut State,
        scores: &mut Scores,
    ) {
        // A prompt chunk's blocks have nothing to ask for (their task asked for the next one
        // at once), and a kernel that tested for it per run of dimensions, or asked for empty
        // spans, made a chunk's attention 8–9% slower at 4k (2-core Zen 2 VM) and decoding
        // 1–3% slower: each way gets a kernel of its own.
        let ask = self.ahead.iter().any(|span| !span.is_empty());
        let mut at = states.start;
        while at < states.end {
            let n = states_per_tile(states.end - at);
            let q = |i: usize| query(at + i);
            // SAFETY (all six): the CPU has AVX2 and FMA.
            unsafe {
                match n {
                    6 => self.attend_asking::<6>(ask, [0, 1, 2, 3, 4, 5].map(q), state, at, scores),
                    5 => self.attend_asking::<5>(ask, [0, 1, 2, 3, 4].map(q), state, at, scores),
                    4 => self.attend_asking::<4>(ask, [0, 1, 2, 3].map(q), state, at, scores),
                    3 => self.attend_asking::<3>(ask, [0, 1, 2].map(q), state, at, scores),
                    2 => self.attend_asking::<2>(ask, [0, 1].map(q), state, at, scores),
                    _ => self.attend_asking::<1>(ask, [q(0)], state, at, scores),
                }
            }
            at += n;
        }
    }

    /// [`Self::attend`] with `ASK` chosen by `ask`.
    ///
    /// # Safety
    /// The CPU has AVX2, FMA and F16C.
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn attend_asking<const N: usize>(
        &self,
        ask: bool,
        queries: [&[f32]; N],
        state: &mut State,
        at: usize,
        scores: &mut Scores,
    ) {
        // SAFETY (both): this function's contract.
        if ask {
            unsafe { self.attend::<N, true>(queries, state, at, scores) }
        } else {
            unsafe { self.attend::<N, false>(queries, state, at, scores) }
        }
    }

    /// Folds the block into the states `at..at + N`, one per query, asking for the next
    /// block's keys and values on the way where `ASK` says so.
    ///
    /// # Safety
    /// The CPU has AVX2, FMA and F16C.
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn attend<const N: usize, const ASK: bool>(
        &self,
        queries: [&[f32]; N],
        state: &mut State,
        at: usize,
        scores: &mut Scores,
    ) {
        let dim = self.dim;
        assert!(
            dim.is_multiple_of(DIM_CHUNK)
                && (1..=KEY_BLOCK).contains(&self.count)
                && self.keys.len() >= dim * KEY_BLOCK
                && self.values.len() >= self.count * dim
                && queries.iter().all(|q| q.len() == dim)
                && state.acc.len() >= (at + N) * dim
                && state.max.len() >= at + N
        );
        let tiles = self.count.div_ceil(KEY_TILE);
        let chunks = dim.div_ceil(DIM_CHUNK);
        let scale = _mm256_set1_ps(self.scale);
        let mut requests = ASK.then(|| Requests::new(&self.ahead, tiles * chunks));
        for tile in 0..tiles {
            let mut acc = [[_mm256_setzero_ps(); 2]; N];
            for chunk in (0..dim).step_by(DIM_CHUNK) {
                if let Some(requests) = &mut requests {
                    requests.ask_next();
                }
                let mut part = [[_mm256_setzero_ps(); 2]; N];
                // A whole run: `dim` is a multiple of it (asserted above), and a loop of a
                // known count is unrolled, with no count kept or tested: decode attention on
                // the 0.5B's heads at 4k 144–145 → 137–138 µs a layer, the 1.5B's 195–196 →
                // 189–190 (2-core Zen 2 VM, `examples/attention 2 decode`, in turn).
                for d in chunk..chunk + DIM_CHUNK {
                    // SAFETY: `d < dim` and the tile's 16 keys are inside a block of
                    // `KEY_BLOCK` (asserted above).
                    let (k0, k1) = unsafe {
                        let k = self.keys.as_ptr().add(d * KEY_BLOCK + tile * KEY_TILE);
                        (load8(k), load8(k.add(LANES)))
                    };
                    for (part, query) in part.iter_mut().zip(&queries) {
                        // SAFETY: `d < dim = query.len()`.
                        let q = _mm256_broadcast_ss(unsafe { query.get_unchecked(d) });
                        part[0] = _mm256_fmadd_ps(q, k0, part[0]);
                        part[1] = _mm256_fmadd_ps(q, k1, part[1]);
                    }
                }
                for (acc, part) in acc.iter_mut().zip(&part) {
                    acc[0] = _mm256_add_ps(acc[0], part[0]);
                    acc[1] = _mm256_add_ps(acc[1], part[1]);
                }
            }
            for (acc, scores) in acc.iter().zip(scores.iter_mut()) {
                let to = &mut scores[tile * KEY_TILE..][..KEY_TILE];
                // SAFETY: `to` holds 16 f32.
                unsafe {
                    _mm256_storeu_ps(to.as_mut_ptr(), _mm256_mul_ps(acc[0], scale));
                    _mm256_storeu_ps(to.as_mut_ptr().add(LANES), _mm256_mul_ps(acc[1], scale));
                }
            }
        }
        // SAFETY: the CPU has AVX2 and FMA.
        let corrections = unsafe { self.softmax::<N, false>(scores, tiles * KEY_TILE, state, at) };
        // Three registers of dimensions per state where they fit: four states' twelve
        // accumulators, three loaded values and a broadcast weight are the sixteen registers,
        // and twelve chains of multiply-adds (nine for three states) hide their latency where
        // two registers' eight (and six) did not: a prompt chunk's attention 6–7% faster on a
        // 2-core Zen 2 VM, the same bits (each sum still runs in key order). Five or six
        // states take two registers each, ten or twelve chains.
        let mut d = 0;
        // SAFETY (all three): the CPU has AVX2 and FMA; `d + 8 · V <= dim`.
        while N <= 4 && d + 3 * LANES <= dim {
            unsafe { self.weigh_values::<N, 3>(scores, &corrections, state, at, d) };
            d += 3 * LANES;
        }
        while d + 2 * LANES <= dim {
            unsafe { self.weigh_values::<N, 2>(scores, &corrections, state, at, d) };
            d += 2 * LANES;
        }
        if d < dim {
            unsafe { self.weigh_values::<N, 1>(scores, &corrections, state, at, d) };
        }
    }

    /// Turns the scores of states `at..at + N` (the first `scored` of each row, a multiple
    /// of 8) into weights, `exp(score - max)` with each state's running maximum updated, and
    /// adds them to its sum; returns by how much each state's earlier sum and values shrink.
    ///
    /// `WIDE` takes the exponentials sixteen to a register (the AVX-512 kernel's), with the
    /// same bits.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA, and AVX-512F too where `WIDE` says so.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn softmax<const N: usize, const WIDE: bool>(
        &self,
        scores: &mut Scores,
        scored: usize,
        state: &mut State,
        at: usize,
    ) -> [f32; N] {
        let rows = &mut scores[..N];
        for row in rows.iter_mut() {
            // Keys past the row's last one (the causal mask, or the block's end) were scored
            // against stale data: they weigh nothing.
            row[self.count..scored].fill(f32::NEG_INFINITY);
        }
        let block_max = row_folds::<N, true>(rows, scored);
        let mut corrections = [0f32; N];
        for (n, (row, correction)) in rows.iter_mut().zip(&mut corrections).enumerate() {
            let i = at + n;
            let new_max = state.max[i].max(block_max[n]);
            // exp(-inf) = 0 on a state's first block: nothing to rescale yet. Past the first
            // few blocks the maximum seldom moves, and exp(0) is exactly 1: libm's `expf`
            // called anyway took 1.5% of the decode attention's time.
            *correction = if state.max[i] == new_max {
                1.0
            } else {
                (state.max[i] - new_max).exp()
            };
            state.max[i] = new_max;
            // SAFETY (both): the CPU has AVX2 and FMA, and AVX-512F where `WIDE` says so
            // (this function's contract).
            unsafe {
                if WIDE {
                    exp_shifted_avx512(&mut row[..scored], new_max);
                } else {
                    exp_shifted_avx2(&mut row[..scored], new_max);
                }
            }
            row[self.count..scored].fill(0.0);
        }
        let sums = row_folds::<N, false>(rows, scored);
        for (n, (sum, correction)) in sums.iter().zip(corrections).enumerate() {
            state.sum[at + n] = state.sum[at + n] * correction + sum;
        }
        corrections
    }

    /// `acc = correction · acc + Σ_j p_j · value j` for dimensions `d..d + 8·V` of the states
    /// `at..at + N`, the probabilities `p` of query `n` in `scores[n]`.
    ///
    /// # Safety
    /// The CPU has AVX2, FMA and F16C; `d + 8 · V <= dim`, and [`Self::attend`]'s assertions
    /// hold.
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn weigh_values<const N: usize, const V: usize>(
        &self,
        scores: &Scores,
        corrections: &[f32; N],
        state: &mut State,
        at: usize,
        d: usize,
    ) {
        let dim = self.dim;
        let acc_ptr = state.acc.as_mut_ptr();
        let mut acc = [[_mm256_setzero_ps(); V]; N];
        for (n, acc) in acc.iter_mut().enumerate() {
            let correction = _mm256_set1_ps(corrections[n]);
            for (v, acc) in acc.iter_mut().enumerate() {
                // SAFETY: state `at + n` exists and `d + 8·V <= dim`.
                let from = unsafe { _mm256_loadu_ps(acc_ptr.add((at + n) * dim + d + v * LANES)) };
                *acc = _mm256_mul_ps(correction, from);
            }
        }
        let values = self.values.as_ptr();
        each_key(self.count, |j| {
            // SAFETY: row `j < count` of the values, dimensions `d..d + 8·V`.
            let x: [__m256; V] =
                std::array::from_fn(|v| unsafe { load8(values.add(j * dim + d + v * LANES)) });
            for (acc, scores) in acc.iter_mut().zip(scores) {
                // SAFETY: `j < count <= KEY_BLOCK`.
                let p = _mm256_broadcast_ss(unsafe { scores.get_unchecked(j) });
                for (acc, x) in acc.iter_mut().zip(x) {
                    *acc = _mm256_fmadd_ps(p, x, *acc);
                }
            }
        });
        for (n, acc) in acc.iter().enumerate() {
            for (v, acc) in acc.iter().enumerate() {
                // SAFETY: as for the loads above.
                unsafe { _mm256_storeu_ps(acc_ptr.add((at + n) * dim + d + v * LANES), *acc) };
            }
        }
    }
}

/// Calls `step(j)` for each key `j` in `0..count` of a block, in order. A whole block's run has
/// a constant length, which the compiler unrolls; the same operations run in the same order.
/// With the AVX-512 score loop's runs of constant length too, a prompt chunk's attention took
/// 3–7% less time (Intel Xeon VM, `examples/attention`, runs in turn); the AVX2 kernel, whose
/// score runs were already constant, ran as fast as before on that VM.
#[inline(always)]
pub(super) fn each_key(count: usize, mut step: impl FnMut(usize)) {
    if count == KEY_BLOCK {
        for j in 0..KEY_BLOCK {
            step(j);
        }
    } else {
        for j in 0..count {
            step(j);
        }
    }
}

/// Each of `N` rows' first `len` values (a multiple of 8) folded into one: their largest where
/// `MAX` says so, else their sum. The rows' chains run side by side, each row's in the order
/// one alone would take.
#[target_feature(enable = "avx2,fma")]
fn row_folds<const N: usize, const MAX: bool>(rows: &[[f32; KEY_BLOCK]], len: usize) -> [f32; N] {
    let wide = |a, b| {
        if MAX {
            _mm256_max_ps(a, b)
        } else {
            _mm256_add_ps(a, b)
        }
    };
    let narrow = |a, b| {
        if MAX {
            _mm_max_ps(a, b)
        } else {
            _mm_add_ps(a, b)
        }
    };
    let mut folds = [_mm256_set1_ps(if MAX { f32::NEG_INFINITY } else { 0.0 }); N];
    for at in (0..len).step_by(LANES) {
        for (fold, row) in folds.iter_mut().zip(rows) {
            // SAFETY: the slice holds 8 f32.
            *fold = wide(*fold, unsafe {
                _mm256_loadu_ps(row[at..][..LANES].as_ptr())
            });
        }
    }
    folds.map(|f| {
        let f = narrow(_mm256_castps256_ps128(f), _mm256_extractf128_ps(f, 1));
        let f = narrow(f, _mm_movehl_ps(f, f));
        _mm_cvtss_f32(narrow(f, _mm_movehdup_ps(f)))
    })
}

/// Eight consecutive elements from `p`, as f32.
///
/// # Safety
/// The CPU has AVX2 and F16C; `p..p + 8` is readable.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
unsafe fn load8<E: KvElement>(p: *const E) -> __m256 {
    // SAFETY (both): eight elements are readable from `p` (the contract), and `KIND` names
    // their layout (the trait is sealed).
    match E::KIND {
        Kind::F32 => unsafe { _mm256_loadu_ps(p.cast()) },
        Kind::F16 => unsafe { _mm256_cvtph_ps(_mm_loadu_si128(p.cast())) },
    }
}

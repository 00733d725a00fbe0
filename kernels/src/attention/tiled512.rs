//! The tiled attention kernel's two products on AVX-512: scores and weighted values.
//!
//! The AVX2 kernel (`tiled.rs`) takes up to six query vectors at a time, each key tile in two
//! 8-lane registers, and broadcasts every query element and weight into a register of its own
//! before its multiply-adds; the seven query heads that share a KV head in Qwen2.5-0.5B then
//! take a tile of four and one of three, and each of the two widens the block's values again.
//! Here the 32 registers hold seven queries' accumulators for a tile of 32 keys (two 16-lane
//! registers each), so the seven go through together; each query element or weight takes a
//! single broadcast load, and each value row is widened once per tile of seven. On a 2-core
//! Zen 4 VM, where a 16-lane multiply-add costs what two 8-lane ones do, this is the same
//! arithmetic in fewer instructions: decode attention at a depth of 4k went from 130 to
//! 123–128 µs per layer on Qwen2.5-0.5B's heads and from 270 to 224–235 µs on 1.5B's (two
//! threads, `examples/attention`, runs taken in turn); a prompt chunk's was 3–4% faster on
//! the first and 15% on the second. With the keys held in blocks (`keys.rs`), the key
//! transposes both kernels did went, and the same decode attention from memory went from
//! 146–161 to 105–113 µs per layer.
//!
//! The sums are taken in the same order as the AVX2 kernel's, lane for lane (runs of
//! [`DIM_CHUNK`] dimensions per score; values in key order), so the two give the same bits.

use std::arch::x86_64::*;
use std::ops::Range;

use super::element::Kind;
use super::tiled::{Block, DIM_CHUNK, Requests, SCORE_ROWS, Scores, each_key};
use super::{KEY_BLOCK, KvElement, State};

/// Query vectors taken together: seven × two key registers, and their runs' partial sums,
/// are 28 of the 32 registers.
const QUERIES: usize = 7;
const _: () = assert!(QUERIES <= SCORE_ROWS);
const LANES: usize = 16;
/// Keys per score tile: two registers.
const KEY_TILE: usize = 2 * LANES;
// A head size that is a multiple of the lanes is whole runs of dimensions.
const _: () = assert!(LANES.is_multiple_of(DIM_CHUNK));
const _: () = assert!(KEY_BLOCK.is_multiple_of(KEY_TILE));

impl<E: KvElement> Block<'_, E> {
    /// [`Block::attend_states`] with the AVX-512 products, up to [`QUERIES`] states at a time.
    ///
    /// # Safety
    /// The CPU has AVX-512F, AVX2, FMA and F16C; the head size is a multiple of 16.
    #[target_feature(enable = "avx512f,avx2,fma,f16c")]
    pub(super) unsafe fn attend_states_wide<'q>(
        &self,
        states: Range<usize>,
        query: &impl Fn(usize) -> &'q [f32],
        state: &mut State,
        scores: &mut Scores,
    ) {
        let mut at = states.start;
        while at < states.end {
            let n = QUERIES.min(states.end - at);
            let q = |i: usize| query(at + i);
            // SAFETY (all seven): this function's contract.
            unsafe {
                match n {
                    7 => self.attend_wide::<7>(std::array::from_fn(q), state, at, scores),
                    6 => self.attend_wide::<6>(std::array::from_fn(q), state, at, scores),
                    5 => self.attend_wide::<5>(std::array::from_fn(q), state, at, scores),
                    4 => self.attend_wide::<4>(std::array::from_fn(q), state, at, scores),
                    3 => self.attend_wide::<3>(std::array::from_fn(q), state, at, scores),
                    2 => self.attend_wide::<2>(std::array::from_fn(q), state, at, scores),
                    _ => self.attend_wide::<1>([q(0)], state, at, scores),
                }
            }
            at += n;
        }
    }

    /// Folds the block into the states `at..at + N`, one per query.
    ///
    /// # Safety
    /// As for [`Self::attend_states_wide`].
    #[target_feature(enable = "avx512f,avx2,fma,f16c")]
    unsafe fn attend_wide<const N: usize>(
        &self,
        queries: [&[f32]; N],
        state: &mut State,
        at: usize,
        scores: &mut Scores,
    ) {
        let dim = self.dim;
        assert!(
            N <= QUERIES
                && dim.is_multiple_of(LANES)
                && (1..=KEY_BLOCK).contains(&self.count)
                && self.keys.len() >= dim * KEY_BLOCK
                && self.values.len() >= self.count * dim
                && queries.iter().all(|q| q.len() == dim)
                && state.acc.len() >= (at + N) * dim
                && state.max.len() >= at + N
        );
        let tiles = self.count.div_ceil(KEY_TILE);
        let chunks = dim.div_ceil(DIM_CHUNK);
        let scale = _mm512_set1_ps(self.scale);
        let mut requests = Requests::new(&self.ahead, tiles * chunks);
        for tile in 0..tiles {
            let mut acc = [[_mm512_setzero_ps(); 2]; N];
            for chunk in (0..dim).step_by(DIM_CHUNK) {
                requests.ask_next();
                let mut part = [[_mm512_setzero_ps(); 2]; N];
                // A run of constant length, which the compiler unrolls (see `each_key`).
                for d in chunk..chunk + DIM_CHUNK {
                    // SAFETY: `d < dim` and the tile's 32 keys are inside a block of
                    // `KEY_BLOCK` (asserted above).
                    let (k0, k1) = unsafe {
                        let k = self.keys.as_ptr().add(d * KEY_BLOCK + tile * KEY_TILE);
                        (load16(k), load16(k.add(LANES)))
                    };
                    for (part, query) in part.iter_mut().zip(&queries) {
                        // SAFETY: `d < dim = query.len()`.
                        let q = _mm512_set1_ps(unsafe { *query.get_unchecked(d) });
                        part[0] = _mm512_fmadd_ps(q, k0, part[0]);
                        part[1] = _mm512_fmadd_ps(q, k1, part[1]);
                    }
                }
                for (acc, part) in acc.iter_mut().zip(&part) {
                    acc[0] = _mm512_add_ps(acc[0], part[0]);
                    acc[1] = _mm512_add_ps(acc[1], part[1]);
                }
            }
            for (acc, scores) in acc.iter().zip(scores.iter_mut()) {
                let to = &mut scores[tile * KEY_TILE..][..KEY_TILE];
                // SAFETY: `to` holds 32 f32.
                unsafe {
                    _mm512_storeu_ps(to.as_mut_ptr(), _mm512_mul_ps(acc[0], scale));
                    _mm512_storeu_ps(to.as_mut_ptr().add(LANES), _mm512_mul_ps(acc[1], scale));
                }
            }
        }
        // SAFETY: the CPU has AVX-512F, AVX2 and FMA (this function's contract).
        let corrections = unsafe { self.softmax::<N, true>(scores, tiles * KEY_TILE, state, at) };
        let mut d = 0;
        // SAFETY (both): this function's contract; `d + 16 · V <= dim`.
        while d + 2 * LANES <= dim {
            unsafe { self.weigh_values_wide::<N, 2>(scores, &corrections, state, at, d) };
            d += 2 * LANES;
        }
        if d < dim {
            unsafe { self.weigh_values_wide::<N, 1>(scores, &corrections, state, at, d) };
        }
    }

    /// `acc = correction · acc + Σ_j p_j · value j` for dimensions `d..d + 16·V` of the states
    /// `at..at + N`, the probabilities `p` of query `n` in `scores[n]`.
    ///
    /// # Safety
    /// As for [`Self::attend_wide`], whose assertions hold; `d + 16 · V <= dim`.
    #[target_feature(enable = "avx512f,avx2,fma,f16c")]
    unsafe fn weigh_values_wide<const N: usize, const V: usize>(
        &self,
        scores: &Scores,
        corrections: &[f32; N],
        state: &mut State,
        at: usize,
        d: usize,
    ) {
        let dim = self.dim;
        let acc_ptr = state.acc.as_mut_ptr();
        let mut acc = [[_mm512_setzero_ps(); V]; N];
        for (n, acc) in acc.iter_mut().enumerate() {
            let correction = _mm512_set1_ps(corrections[n]);
            for (v, acc) in acc.iter_mut().enumerate() {
                // SAFETY: state `at + n` exists and `d + 16·V <= dim`.
                let from = unsafe { _mm512_loadu_ps(acc_ptr.add((at + n) * dim + d + v * LANES)) };
                *acc = _mm512_mul_ps(correction, from);
            }
        }
        let values = self.values.as_ptr();
        let step = |j: usize| {
            // SAFETY: row `j < count` of the values, dimensions `d..d + 16·V`.
            let x: [__m512; V] =
                std::array::from_fn(|v| unsafe { load16(values.add(j * dim + d + v * LANES)) });
            for (acc, scores) in acc.iter_mut().zip(scores) {
                // SAFETY: `j < count <= KEY_BLOCK`.
                let p = _mm512_set1_ps(unsafe { *scores.get_unchecked(j) });
                for (acc, x) in acc.iter_mut().zip(x) {
                    *acc = _mm512_fmadd_ps(p, x, *acc);
                }
            }
        };
        each_key(self.count, step);
        for (n, acc) in acc.iter().enumerate() {
            for (v, acc) in acc.iter().enumerate() {
                // SAFETY: as for the loads above.
                unsafe { _mm512_storeu_ps(acc_ptr.add((at + n) * dim + d + v * LANES), *acc) };
            }
        }
    }
}

/// Sixteen consecutive elements from `p`, as f32.
///
/// # Safety
/// The CPU has AVX-512F; `p..p + 16` is readable.
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
#[inline]
unsafe fn load16<E: KvElement>(p: *const E) -> __m512 {
    // SAFETY (both): sixteen elements are readable from `p` (the contract), and `KIND` names
    // their layout (the trait is sealed).
    match E::KIND {
        Kind::F32 => unsafe { _mm512_loadu_ps(p.cast()) },
        Kind::F16 => unsafe { _mm512_cvtph_ps(_mm256_loadu_si256(p.cast())) },
    }
}

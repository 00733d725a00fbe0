use half::f16;

use super::{
    AttentionShape, KEY_BLOCK, Simd, attention_on, causal_attention, exp_shifted, key_splits,
    split_keys, store_keys,
};

/// A small deterministic generator, so failures reproduce.
struct Lcg(u64);

impl Lcg {
    fn float(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }

    fn fill(&mut self, n: usize, scale: f32) -> Vec<f32> {
        (0..n).map(|_| self.float() * scale).collect()
    }

    /// `queries` random query rows after `offset` cached tokens, in a cache with at least
    /// `spare` positions past them: the shape, then `q`, `k` (one row per position, as the
    /// reference reads it; [`blocked`] gives the kernel's layout) and `v`.
    fn case(
        &mut self,
        (heads, kv_heads, head_dim): (usize, usize, usize),
        queries: usize,
        offset: usize,
        spare: usize,
    ) -> (AttentionShape, Vec<f32>, Vec<f32>, Vec<f32>) {
        let shape = AttentionShape {
            heads,
            kv_heads,
            head_dim,
            queries,
            offset,
            capacity: (offset + queries + spare).next_multiple_of(KEY_BLOCK),
        };
        let cache = kv_heads * shape.capacity * head_dim;
        let q = self.fill(heads * queries * head_dim, 2.0);
        let (k, v) = (self.fill(cache, 2.0), self.fill(cache, 1.0));
        (shape, q, k, v)
    }
}

/// Keys given one row per position, `(kv_heads, capacity, head_dim)`, as the cache holds them.
fn blocked<E: Copy>(k: &[E], shape: AttentionShape) -> Vec<E> {
    let mut cache = k.to_vec();
    store_keys(&mut cache, shape.cache(), 0, k).unwrap();
    cache
}

/// Softmax attention in f64 with an explicit mask, straight from the definition.
fn reference(q: &[f32], k: &[f32], v: &[f32], s: AttentionShape) -> Vec<f32> {
    let d = s.head_dim;
    let mut out = vec![0f32; s.queries * s.heads * d];
    for h in 0..s.heads {
        let kv = h / (s.heads / s.kv_heads);
        for i in 0..s.queries {
            let query = &q[(h * s.queries + i) * d..][..d];
            let key = |j: usize| &k[(kv * s.capacity + j) * d..][..d];
            let scores: Vec<f64> = (0..=s.offset + i)
                .map(|j| {
                    let dot: f64 = query
                        .iter()
                        .zip(key(j))
                        .map(|(a, b)| f64::from(*a) * f64::from(*b))
                        .sum();
                    dot / (d as f64).sqrt()
                })
                .collect();
            let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let weights: Vec<f64> = scores.iter().map(|x| (x - max).exp()).collect();
            let total: f64 = weights.iter().sum();
            for dd in 0..d {
                let value: f64 = weights
                    .iter()
                    .enumerate()
                    .map(|(j, w)| w * f64::from(v[(kv * s.capacity + j) * d + dd]))
                    .sum();
                out[(i * s.heads + h) * d + dd] = (value / total) as f32;
            }
        }
    }
    out
}

/// The attention of `q` over `k` and `v` held in f32, then held in f16, each against the
/// definition over the values the cache holds; `check` gets what was held, and the error.
fn in_f32_and_f16(
    simd: Simd,
    threads: usize,
    (q, k, v): (&[f32], &[f32], &[f32]),
    shape: AttentionShape,
    check: impl Fn(&str, f32),
) {
    let want = reference(q, k, v, shape);
    let mut got = vec![f32::NAN; want.len()];
    attention_on(simd, threads, q, &blocked(k, shape), v, shape, &mut got).unwrap();
    check("f32", max_abs_error(&got, &want));
    let (k, v): (Vec<f16>, Vec<f16>) = (
        k.iter().copied().map(f16::from_f32).collect(),
        v.iter().copied().map(f16::from_f32).collect(),
    );
    let widen = |x: &[f16]| x.iter().map(|h| h.to_f32()).collect::<Vec<f32>>();
    let want = reference(q, &widen(&k), &widen(&v), shape);
    let mut got = vec![f32::NAN; want.len()];
    attention_on(simd, threads, q, &blocked(&k, shape), &v, shape, &mut got).unwrap();
    check("f16", max_abs_error(&got, &want));
}

/// The largest difference between matching elements, NaN if any element is NaN (an output
/// never written stays NaN; `f32::max` alone would skip it).
fn max_abs_error(got: &[f32], want: &[f32]) -> f32 {
    got.iter().zip(want).fold(0f32, |m, (g, w)| {
        let d = (g - w).abs();
        if m.is_nan() || d.is_nan() {
            f32::NAN
        } else {
            m.max(d)
        }
    })
}

#[test]
fn matches_the_definition_for_every_mix_of_depth_chunk_and_head_layout() {
    let mut rng = Lcg(5);
    // (heads, kv_heads, head_dim): grouped, multi-head, a dim that is not a multiple of 8, and
    // for the tiled kernel five heads per KV head (one tile of five) with a dim of 24 (values
    // in a register pair of sixteen dims, then one of eight), six with a dim of 40, and eight
    // (two tiles of four; three registers of dims, then one).
    for (heads, kv_heads, head_dim) in [
        (4, 2, 16),
        (3, 3, 8),
        (14, 2, 64),
        (4, 2, 128),
        (2, 1, 12),
        (5, 1, 24),
        (12, 2, 40),
        (8, 1, 32),
    ] {
        for (queries, offset) in [
            (1, 0),
            (1, 5),
            (1, 130),
            (3, 0),
            (17, 0),
            (17, 63),
            (40, 70),
        ] {
            let (shape, q, k, v) = rng.case((heads, kv_heads, head_dim), queries, offset, 9);
            for simd in [Simd::Detect, Simd::Avx2, Simd::Portable] {
                in_f32_and_f16(simd, 1, (&q, &k, &v), shape, |held, err| {
                    assert!(err < 2e-5, "{simd:?} {held} {shape:?}: max abs error {err}")
                });
            }
        }
    }
}

/// Decoding makes one task per KV head; on a pool with more threads the key range is cut into
/// parts whose softmax states are merged, which must give the same attention as one pass.
#[test]
fn a_key_range_split_between_threads_matches_the_definition() {
    let mut rng = Lcg(11);
    for (heads, kv_heads, head_dim) in [(14, 2, 64), (8, 1, 128), (3, 1, 12)] {
        for (queries, offset) in [(1, 255), (1, 256), (1, 700), (1, 1500), (5, 600), (20, 900)] {
            let (shape, q, k, v) = rng.case((heads, kv_heads, head_dim), queries, offset, 3);
            for threads in [3, 8, 64] {
                for simd in [Simd::Detect, Simd::Avx2, Simd::Portable] {
                    in_f32_and_f16(simd, threads, (&q, &k, &v), shape, |held, err| {
                        assert!(
                            err < 2e-5,
                            "{simd:?} {held} on {threads} threads {shape:?}: max abs error {err}"
                        )
                    });
                }
            }
        }
    }
}

#[test]
fn key_ranges_are_split_only_to_feed_idle_threads_and_cover_every_key_once() {
    // Enough tasks, or too few keys to be worth it: one part.
    assert_eq!(key_splits(2, 100_000, 2), 1);
    assert_eq!(key_splits(64, 100_000, 16), 1);
    assert_eq!(key_splits(2, 300, 16), 1);
    // Two KV heads on sixteen threads at a depth of 4k: eight parts of 512 keys.
    assert_eq!(key_splits(2, 4096, 16), 8);
    assert_eq!(key_splits(1, 1024, 16), 4);
    for visible in [1, 63, 64, 65, 1000, 4097] {
        for splits in 1..=9 {
            let parts: Vec<_> = (0..splits)
                .map(|p| split_keys(visible, splits, p))
                .collect();
            assert_eq!(parts[0].start, 0);
            assert_eq!(parts[splits - 1].end, visible, "{visible} keys in {splits}");
            for pair in parts.windows(2) {
                assert_eq!(pair[0].end, pair[1].start);
            }
            assert!(
                parts
                    .iter()
                    .all(|p| p.start.is_multiple_of(KEY_BLOCK) || p.is_empty())
            );
        }
    }
}

#[test]
fn keys_after_a_query_never_reach_it() {
    let shape = AttentionShape {
        heads: 2,
        kv_heads: 1,
        head_dim: 8,
        queries: 4,
        offset: 0,
        capacity: KEY_BLOCK,
    };
    let mut rng = Lcg(9);
    let q = rng.fill(2 * 4 * 8, 1.0);
    let mut k = rng.fill(KEY_BLOCK * 8, 1.0);
    let mut v = rng.fill(KEY_BLOCK * 8, 1.0);
    let mut before = vec![0f32; q.len()];
    causal_attention(&q, &blocked(&k, shape), &v, shape, &mut before).unwrap();
    // Changing the last value row may only change the last query's output. Its key is made
    // to score far above every other key for every query: a kernel that scores the whole
    // block and masks afterwards must leave it out of the earlier rows' maximum too, or their
    // weights underflow.
    v[3 * 8..4 * 8].iter_mut().for_each(|x| *x += 100.0);
    for (d, key) in k[3 * 8..4 * 8].iter_mut().enumerate() {
        *key = 1e4 * (q[d] + q[4 * 8 + d]).signum();
    }
    let mut after = vec![0f32; q.len()];
    causal_attention(&q, &blocked(&k, shape), &v, shape, &mut after).unwrap();
    assert_eq!(before[..3 * 2 * 8], after[..3 * 2 * 8]);
    assert_ne!(before[3 * 2 * 8..], after[3 * 2 * 8..]);
}

#[test]
fn exp_is_within_a_few_ulp_of_std_over_the_softmax_range() {
    let xs: Vec<f32> = (0..=87_000).map(|i| -(i as f32) / 1000.0).collect();
    let mut got = xs.clone();
    exp_shifted(&mut got, 0.0);
    for (x, g) in xs.iter().zip(&got) {
        let want = x.exp();
        assert!(
            (g - want).abs() <= want * 3e-7,
            "exp({x}) = {g}, std says {want}"
        );
    }
    let mut far = [-1e30f32, f32::NEG_INFINITY];
    exp_shifted(&mut far, 0.0);
    assert!(far.iter().all(|&x| (0.0..1e-37).contains(&x)), "{far:?}");
}

#[test]
fn mismatched_buffers_are_errors_not_panics() {
    let shape = AttentionShape {
        heads: 4,
        kv_heads: 2,
        head_dim: 8,
        queries: 2,
        offset: 3,
        capacity: KEY_BLOCK,
    };
    let (q, kv) = (vec![0f32; 4 * 2 * 8], vec![0f32; 2 * KEY_BLOCK * 8]);
    let mut out = vec![0f32; q.len()];
    assert!(causal_attention(&q, &kv, &kv, shape, &mut out).is_ok());
    let overflow = AttentionShape {
        capacity: 4,
        ..shape
    };
    let err = causal_attention(&q, &kv, &kv, overflow, &mut out).unwrap_err();
    assert!(err.to_string().contains("exceed"), "{err}");
    // Keys are held in whole blocks (`keys.rs`): a capacity between them is no layout.
    let between_blocks = AttentionShape {
        capacity: 5,
        ..shape
    };
    let short = vec![0f32; 2 * 5 * 8];
    let err = causal_attention(&q, &short, &short, between_blocks, &mut out).unwrap_err();
    assert!(err.to_string().contains("whole blocks"), "{err}");
    let uneven = AttentionShape {
        kv_heads: 3,
        ..shape
    };
    assert!(causal_attention(&q, &kv, &kv, uneven, &mut out).is_err());
    assert!(causal_attention(&q[1..], &kv, &kv, shape, &mut out).is_err());
    assert!(causal_attention(&q, &kv, &kv[1..], shape, &mut out).is_err());
}

/// Sizes from a crafted model header whose products wrap to zero would match empty buffers
/// in a release build; they are refused before any kernel runs.
#[test]
fn sizes_whose_products_overflow_are_errors_not_wraps() {
    let wraps = AttentionShape {
        heads: 4,
        kv_heads: 1,
        head_dim: 4,
        queries: 1 << 62,
        offset: 0,
        capacity: 1 << 62,
    };
    let mut out: [f32; 0] = [];
    let err = causal_attention::<f32>(&[], &[], &[], wraps, &mut out).unwrap_err();
    assert!(err.to_string().contains("overflow"), "{err}");
    let past_the_end = AttentionShape {
        queries: usize::MAX,
        offset: 1,
        capacity: usize::MAX,
        ..wraps
    };
    let err = causal_attention::<f32>(&[], &[], &[], past_the_end, &mut out).unwrap_err();
    assert!(err.to_string().contains("exceed"), "{err}");
}

/// A poisoned model can write NaN or infinite keys into the cache; attention must finish (a
/// debug build included: no overflowing integer arithmetic in the exp) for the engine to
/// classify the fault.
#[test]
fn non_finite_inputs_finish_without_a_panic() {
    let shape = AttentionShape {
        heads: 14,
        kv_heads: 2,
        head_dim: 64,
        queries: 20,
        offset: 100,
        capacity: 128,
    };
    let mut rng = Lcg(3);
    let q = rng.fill(14 * 20 * 64, 1.0);
    let v = rng.fill(2 * 128 * 64, 1.0);
    let v16: Vec<f16> = v.iter().copied().map(f16::from_f32).collect();
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e30] {
        let mut k = rng.fill(2 * 128 * 64, 1.0);
        k[70 * 64 + 5] = bad;
        // In an f16 cache 1e30 is past the range: it is held as infinity.
        let k16: Vec<f16> = blocked(&k, shape).into_iter().map(f16::from_f32).collect();
        let k = blocked(&k, shape);
        for simd in [Simd::Detect, Simd::Avx2, Simd::Portable] {
            let mut out = vec![0f32; q.len()];
            attention_on(simd, 2, &q, &k, &v, shape, &mut out).unwrap();
            attention_on(simd, 2, &q, &k16, &v16, shape, &mut out).unwrap();
        }
    }
}

/// The AVX-512 products sum in the AVX2 kernel's order, lane for lane, so the two give the
/// same bits: a CPU with AVX-512 decodes what one without it does.
#[cfg(target_arch = "x86_64")]
#[test]
fn the_avx512_products_give_the_avx2_kernels_bits() {
    if !(is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx2")) {
        eprintln!("skipped: this CPU has no AVX-512F");
        return;
    }
    let mut rng = Lcg(21);
    // Seven heads per KV head (one tile of seven), six, and five at a dim of 48 (a register
    // pair of sixteen dims, then one).
    for (heads, kv_heads, head_dim) in [(14, 2, 64), (12, 2, 128), (5, 1, 48)] {
        // Else the comparison below would hold the AVX2 kernel to itself.
        assert!(Simd::Detect.wide(head_dim) && !Simd::Avx2.wide(head_dim));
        for (queries, offset) in [(1, 0), (1, 100), (1, 4000), (17, 63), (40, 300)] {
            let (shape, q, k, v) = rng.case((heads, kv_heads, head_dim), queries, offset, 5);
            let k16: Vec<f16> = blocked(&k, shape).into_iter().map(f16::from_f32).collect();
            let v16: Vec<f16> = v.iter().copied().map(f16::from_f32).collect();
            for threads in [1, 2, 8] {
                let run = |simd| {
                    let mut out = vec![f32::NAN; q.len()];
                    attention_on(simd, threads, &q, &k16, &v16, shape, &mut out).unwrap();
                    out.iter().map(|x| x.to_bits()).collect::<Vec<u32>>()
                };
                let (wide, narrow) = (run(Simd::Detect), run(Simd::Avx2));
                assert!(wide == narrow, "{shape:?} on {threads} threads");
            }
        }
    }
}

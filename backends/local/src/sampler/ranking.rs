//! Ranking a token's logits: the single best, or the best few, in one pass.
//!
//! Every decoded token ranks the whole vocabulary (152k logits for Qwen2.5) on one thread
//! while the pool's others wait. Sampling keeps the `top_k` best (20 by default, 64 under a
//! grammar); pairing every logit with its id and partially sorting the pairs took 0.41 ms a
//! token on a 2-core Intel Xeon VM, about 2% of a 0.5B's decoded token. Here one pass keeps
//! the best seen so far in a short sorted list and looks at a run of [`RUN`] logits only
//! where one of them reaches the list's last; once the list holds the vocabulary's head,
//! nearly every run is passed over by a vector compare.

use std::cmp::Ordering;

/// Logits looked over at once: two AVX-512 registers, four AVX2 ones, eight SSE ones.
const RUN: usize = 32;

/// Beyond this many, a kept list costs more to insert into than a partial sort.
const KEPT_AT_MOST: usize = 256;

/// The share of the logits that may enter the kept list before the partial sort takes over.
/// A model's logits enter a few hundred times in 152k (about `n · ln(152k / n)`: 180 for the
/// default 20); rising ones, which only a faulty model gives, would enter every time, each
/// insert moving up to [`KEPT_AT_MOST`] pairs.
const INSERTS_PER_LOGIT: usize = 32;

/// Best first; equal logits in id order, so every ranking is deterministic. Logits compare as
/// [`f32::total_cmp`] orders them (a NaN, which no model should give, has a place too).
pub(crate) fn by_logit(a: &(u32, f32), b: &(u32, f32)) -> Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}

/// The `n` best (id, logit) pairs, best first ([`by_logit`]); all of them where `n` is 0 or
/// at least the vocabulary.
pub(crate) fn top_n(logits: &[f32], n: usize) -> Vec<(u32, f32)> {
    if n == 0 || n >= logits.len() || n > KEPT_AT_MOST {
        return sorted_head(logits, n);
    }
    let mut kept: Vec<(u32, f32)> = Vec::with_capacity(n + 1);
    let mut inserts_left = logits.len() / INSERTS_PER_LOGIT;
    for (run_index, run) in logits.chunks(RUN).enumerate() {
        // A logit below the last kept one cannot enter; one equal to it as floats may (+0
        // against -0, or a tie that `total_cmp` breaks), so only a run below it throughout
        // is passed over. A NaN compares false and sends its run to the exact test.
        if kept.len() == n {
            let bar = kept[n - 1].1;
            if run.iter().fold(true, |below, &x| below & (x < bar)) {
                continue;
            }
        }
        for (offset, &logit) in run.iter().enumerate() {
            let id = (run_index * RUN + offset) as u32;
            // Ids only grow, so a logit tied with the last kept one ranks after it.
            if kept.len() == n && logit.total_cmp(&kept[n - 1].1) != Ordering::Greater {
                continue;
            }
            let Some(left) = inserts_left.checked_sub(1) else {
                return sorted_head(logits, n);
            };
            inserts_left = left;
            let at = kept.partition_point(|k| by_logit(k, &(id, logit)) == Ordering::Less);
            kept.insert(at, (id, logit));
            kept.truncate(n);
        }
    }
    kept
}

/// [`top_n`] by pairing every logit with its id: a partial sort, then a sort of the head.
fn sorted_head(logits: &[f32], n: usize) -> Vec<(u32, f32)> {
    let mut cand = with_ids(logits);
    if n > 0 && n < cand.len() {
        cand.select_nth_unstable_by(n - 1, by_logit);
        cand.truncate(n);
    }
    cand.sort_by(by_logit);
    cand
}

/// Every logit with its id.
fn with_ids(logits: &[f32]) -> Vec<(u32, f32)> {
    logits
        .iter()
        .enumerate()
        .map(|(i, &l)| (i as u32, l))
        .collect()
}

/// Index of the largest logit (as `>` compares floats); the lowest index wins ties, so greedy
/// is deterministic. A run of [`RUN`] is looked into only where one of its logits is larger
/// than the best so far.
pub fn argmax(logits: &[f32]) -> u32 {
    let Some(&first) = logits.first() else {
        return 0;
    };
    let (mut best, mut best_logit) = (0, first);
    for (run_index, run) in logits.chunks(RUN).enumerate() {
        if !run.iter().fold(false, |above, &x| above | (x > best_logit)) {
            continue;
        }
        for (offset, &logit) in run.iter().enumerate() {
            if logit > best_logit {
                (best, best_logit) = (run_index * RUN + offset, logit);
            }
        }
    }
    best as u32
}

#[cfg(test)]
mod tests {
    use super::{KEPT_AT_MOST, RUN, argmax, by_logit, top_n, with_ids};

    /// A deterministic spread of logits with many ties, both zeros, infinities and NaNs.
    fn logits(len: usize, seed: u64) -> Vec<f32> {
        let mut state = seed;
        (0..len)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                match (state >> 58) as u8 {
                    0 => f32::NEG_INFINITY,
                    1 => f32::INFINITY,
                    2 => 0.0,
                    3 => -0.0,
                    4 => f32::NAN,
                    5 => -f32::NAN,
                    // Coarse values, so that ties are common.
                    _ => ((state >> 40) % 64) as f32 / 4.0 - 8.0,
                }
            })
            .collect()
    }

    /// A full sort of every pair.
    fn reference_top_n(logits: &[f32], n: usize) -> Vec<(u32, f32)> {
        let mut all = with_ids(logits);
        all.sort_by(by_logit);
        if n > 0 {
            all.truncate(n);
        }
        all
    }

    fn reference_argmax(logits: &[f32]) -> u32 {
        let mut best = 0;
        for (i, &l) in logits.iter().enumerate() {
            if l > logits[best] {
                best = i;
            }
        }
        best as u32
    }

    fn bits(pairs: &[(u32, f32)]) -> Vec<(u32, u32)> {
        pairs.iter().map(|&(id, l)| (id, l.to_bits())).collect()
    }

    /// The kept list gives the full sort's head, pair for pair and bit for bit, for every
    /// length around a run's and every `n` up to past the kept list's limit.
    #[test]
    fn the_best_few_are_the_full_sort_s_head() {
        for len in [1, 2, RUN - 1, RUN, RUN + 1, 3 * RUN + 5, 1000, 100_000] {
            for seed in 0..4 {
                let logits = logits(len, seed);
                for n in [
                    0,
                    1,
                    2,
                    7,
                    20,
                    64,
                    KEPT_AT_MOST,
                    KEPT_AT_MOST + 1,
                    len,
                    len + 3,
                ] {
                    assert_eq!(
                        bits(&top_n(&logits, n)),
                        bits(&reference_top_n(&logits, n)),
                        "{len} logits, seed {seed}, n = {n}"
                    );
                }
            }
        }
    }

    /// A vocabulary where the best come last, so that each logit would enter the list (the
    /// partial sort takes over), and one of equal logits, where ties go to the lowest ids.
    #[test]
    fn rising_and_flat_logits_rank_as_the_full_sort_does() {
        let rising: Vec<f32> = (0..2000).map(|i| i as f32 / 7.0).collect();
        let flat = vec![0.5f32; 2000];
        for logits in [rising, flat] {
            for n in [1, 20, 64] {
                assert_eq!(bits(&top_n(&logits, n)), bits(&reference_top_n(&logits, n)));
            }
        }
        assert_eq!(
            top_n(&[0.5; 100], 3),
            [(0, 0.5), (1, 0.5), (2, 0.5)],
            "ties go to the lowest ids"
        );
        assert_eq!(top_n(&[-0.0, 0.0], 1), [(1, 0.0)], "+0 ranks above -0");
        // The same across runs: a +0 after a run of -0 is not passed over as equal.
        let mut zeros = vec![-0.0f32; RUN];
        zeros.push(0.0);
        assert_eq!(bits(&top_n(&zeros, 1)), [(RUN as u32, 0)]);
    }

    #[test]
    fn argmax_takes_the_first_largest_as_the_plain_loop_does() {
        for len in [1, 2, RUN - 1, RUN, RUN + 1, 1000] {
            for seed in 0..8 {
                let logits = logits(len, seed);
                assert_eq!(
                    argmax(&logits),
                    reference_argmax(&logits),
                    "{len} logits, seed {seed}"
                );
            }
        }
        assert_eq!(argmax(&[0.1, 3.0, 3.0, -1.0]), 1);
        assert_eq!(argmax(&[f32::NAN, 1.0, 2.0]), 0, "nothing is above a NaN");
        assert_eq!(argmax(&[]), 0);
    }
}

//! Sharing a matmul's row groups out between threads so that they finish together.
//!
//! Decode multiplies one activation row by each weight matrix: the work is reading the
//! matrix once, about a hundred times a token, each time split over the pool and joined. Cut
//! into equal halves up front, the halves did not end together: on a 2-core Zen 4 VM one
//! thread waited on the other for 1.4 ms of a 14 ms Q8_0 token and 2.2 ms of a 15 ms Q4_K_M
//! one (`examples/decode`), the worker picking its half up late and the two cores not
//! reading memory at one rate. Here each thread still starts on a contiguous share of its own,
//! taking it from the front a chunk at a time, so its reads stay one stream; a thread whose
//! share runs out takes chunks from the back of the others', where their owners come last.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

/// The part of one thread's share not yet taken: `front..back` of the groups, packed in one
/// word so that its owner (at the front) and a thief (at the back) take from it atomically.
/// Aligned to its own pair of cache lines, so the owners' takes do not contend.
#[repr(align(128))]
struct Share(AtomicU64);

impl Share {
    fn new(range: Range<usize>) -> Self {
        Self(AtomicU64::new(pack(range.start, range.end)))
    }

    /// Up to `n` groups from the front, and no more than half of what is left: what the
    /// share's owner reads next.
    fn take_front(&self, n: usize) -> Option<Range<usize>> {
        self.take(|front, back| front..front + portion(n, back - front))
    }

    /// Up to `n` groups from the back, and no more than half of what is left: what another
    /// thread, out of work, reads.
    fn take_back(&self, n: usize) -> Option<Range<usize>> {
        self.take(|front, back| back - portion(n, back - front)..back)
    }

    /// Takes `pick(front, back)` (a non-empty part at one end) while any is left.
    fn take(&self, pick: impl Fn(usize, usize) -> Range<usize>) -> Option<Range<usize>> {
        let mut word = self.0.load(Ordering::Relaxed);
        loop {
            let (front, back) = unpack(word);
            if front >= back {
                return None;
            }
            let taken = pick(front, back);
            let rest = if taken.start == front {
                pack(taken.end, back)
            } else {
                pack(front, taken.start)
            };
            // Relaxed: the groups' outputs are disjoint, and the scope's join orders every
            // write before the caller reads them.
            match self
                .0
                .compare_exchange_weak(word, rest, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Some(taken),
                Err(now) => word = now,
            }
        }
    }
}

/// How many of `left` groups (at least one) a take of up to `n` gets: takes halve towards the
/// end of a share, so that the last ones, after which a thread may find nothing left to help
/// with, are short.
fn portion(n: usize, left: usize) -> usize {
    n.min(left.div_ceil(2)).max(1)
}

fn pack(front: usize, back: usize) -> u64 {
    ((front as u64) << 32) | back as u64
}

fn unpack(word: u64) -> (usize, usize) {
    ((word >> 32) as usize, (word & u32::MAX as u64) as usize)
}

/// Calls `run(groups)` for ranges that cover `0..groups` once each, at most `chunk` groups
/// long, on `threads` threads of rayon's pool, each starting on an equal contiguous share and
/// helping the others at the end.
///
/// # Panics
/// If `groups` does not fit in 32 bits (no model's matrix comes near).
pub(crate) fn run_shared(
    groups: usize,
    threads: usize,
    chunk: usize,
    run: &(dyn Fn(Range<usize>) + Sync),
) {
    assert!(u32::try_from(groups).is_ok(), "{groups} row groups");
    let threads = threads.clamp(1, groups.max(1));
    let chunk = chunk.max(1);
    let per_thread = groups.div_ceil(threads);
    let shares: Vec<Share> = (0..threads)
        .map(|t| Share::new((t * per_thread).min(groups)..((t + 1) * per_thread).min(groups)))
        .collect();
    let shares = &shares;
    let work = move |me: usize| {
        while let Some(range) = shares[me].take_front(chunk) {
            run(range);
        }
        for other in (1..threads).map(|k| (me + k) % threads) {
            while let Some(range) = shares[other].take_back(chunk) {
                run(range);
            }
        }
    };
    rayon::in_place_scope(|scope| {
        // The calling thread takes the last share itself, so a single share never leaves it.
        for me in 0..threads - 1 {
            scope.spawn(move |_| work(me));
        }
        work(threads - 1);
    });
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::{Share, run_shared};
    use crate::test_support::pool;

    #[test]
    fn the_two_ends_take_disjoint_parts_until_nothing_is_left() {
        let share = Share::new(3..23);
        assert_eq!(share.take_front(4), Some(3..7));
        assert_eq!(share.take_back(4), Some(19..23));
        assert_eq!(share.take_front(4), Some(7..11));
        // Eight left: takes of four are still no more than half.
        assert_eq!(share.take_back(4), Some(15..19));
        // Four left: two, then one, then one.
        assert_eq!(share.take_front(4), Some(11..13));
        assert_eq!(share.take_back(4), Some(14..15));
        assert_eq!(share.take_front(4), Some(13..14));
        assert_eq!(share.take_front(4), None);
        assert_eq!(share.take_back(1), None);
        assert_eq!(Share::new(5..5).take_front(1), None);
    }

    /// Every group is run exactly once, for any number of groups, threads (more or fewer
    /// than the pool's, and than the groups) and chunk sizes.
    #[test]
    fn every_group_is_run_once() {
        for pool_threads in [1, 2, 3] {
            pool(pool_threads).install(|| {
                for groups in [0, 1, 2, 7, 56, 304] {
                    for threads in [1, 2, 3, 8] {
                        for chunk in [0, 1, 3, 64] {
                            let ran = Mutex::new(vec![0u32; groups]);
                            run_shared(groups, threads, chunk, &|range| {
                                assert!(range.len() <= chunk.max(1));
                                let mut ran = ran.lock().unwrap();
                                for g in range {
                                    ran[g] += 1;
                                }
                            });
                            let ran = ran.into_inner().unwrap();
                            assert!(
                                ran.iter().all(|&n| n == 1),
                                "{groups} groups, {threads} threads, chunks of {chunk}: {ran:?}"
                            );
                        }
                    }
                }
            });
        }
    }

    /// A share whose owner never gets to run is taken by the thread that has finished its own,
    /// from the back. In a pool of one the spawned owner of share 0 only runs once the caller
    /// has waited at the scope's end, after its own share (32..64): by then the caller has
    /// taken share 0 whole, last group first.
    #[test]
    fn a_stalled_thread_s_share_is_taken_by_the_others() {
        let ran = Mutex::new(Vec::new());
        pool(1).install(|| {
            run_shared(64, 2, 2, &|range| {
                ran.lock().unwrap().extend(range);
            });
        });
        let ran = ran.into_inner().unwrap();
        assert_eq!(
            ran[..32],
            (32..64).collect::<Vec<_>>()[..],
            "its own share first"
        );
        assert_eq!(ran[32..34], [30, 31], "then the stalled share's back");
        let mut sorted = ran.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..64).collect::<Vec<_>>());
    }
}

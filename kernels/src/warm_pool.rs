//! Keeping a rayon pool's threads awake through a forward pass.
//!
//! Decoding one token runs about a hundred matmuls, each split between the pool's threads and
//! joined, with a few microseconds of single-threaded work (norms, rotations, attention's
//! bookkeeping) between them. Idle rayon workers yield to the OS and then fall asleep, so each
//! matmul's parts waited on a worker waking up: measured on a 2-core VM with
//! `examples/decode` (hearth-local), the joins cost 0.8–1.7 ms of a 14–19 ms token. Here every
//! other thread of the pool spins on the pool's queue instead, taking work the moment it is
//! pushed, until the pass ends: 2–14% faster decoding there (Q4_0, Q8_0 and Q4_K_M). The
//! model asks for this on one-token passes only: prompt chunks read slower with it.

use std::sync::atomic::{AtomicBool, Ordering};

/// Rounds of `spin_loop` between two looks at an empty queue: short enough to pick up a job
/// within about a microsecond, long enough not to hammer the pool's shared state.
const SPINS_PER_LOOK: usize = 64;

/// Runs `f` on this thread while the other threads of the current rayon pool spin, taking any
/// job the pool is given, instead of sleeping. Outside a pool, or in a pool of one, it only
/// runs `f`.
///
/// Spinning threads hold their cores for the whole of `f`: callers use this only when the pool
/// has no more threads than the machine has cores, or the spinners would take time from the
/// threads doing the work.
pub fn keep_pool_warm<R>(f: impl FnOnce() -> R) -> R {
    let Some(me) = rayon::current_thread_index() else {
        return f();
    };
    if rayon::current_num_threads() < 2 {
        return f();
    }
    let done = AtomicBool::new(false);
    rayon::in_place_scope(|scope| {
        let done = &done;
        // Every thread of the pool gets the job, this one too: here it returns at once (this
        // thread may run it while it waits inside `f`, and must not spin there).
        scope.spawn_broadcast(move |_, context| {
            if context.index() == me {
                return;
            }
            while !done.load(Ordering::Acquire) {
                if rayon::yield_now() != Some(rayon::Yield::Executed) {
                    for _ in 0..SPINS_PER_LOOK {
                        std::hint::spin_loop();
                    }
                }
            }
        });
        // Set on the way out even if `f` panics: the scope waits for the spinners to stop.
        let _stop = Stop(done);
        f()
    })
}

/// Tells the spinners to stop when dropped.
struct Stop<'a>(&'a AtomicBool);

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use rayon::prelude::*;

    use super::keep_pool_warm;
    use crate::test_support::pool;

    /// Parallel work inside still runs, on the spinning threads too, and the call returns.
    #[test]
    fn parallel_work_inside_runs_and_the_call_returns() {
        for threads in [1, 2, 4] {
            let sum = pool(threads).install(|| {
                keep_pool_warm(|| {
                    (0..200)
                        .map(|_| (0..10_000u64).into_par_iter().sum::<u64>())
                        .sum::<u64>()
                })
            });
            assert_eq!(sum, 200 * (10_000 * 9_999 / 2), "{threads} threads");
        }
    }

    /// Nested joins (a matmul's split inside the pass) cannot trap this thread in a spinner.
    #[test]
    fn nested_scopes_inside_finish() {
        let ran = AtomicUsize::new(0);
        pool(2).install(|| {
            keep_pool_warm(|| {
                for _ in 0..100 {
                    rayon::in_place_scope(|s| {
                        s.spawn(|_| {
                            ran.fetch_add(1, Ordering::Relaxed);
                        });
                        ran.fetch_add(1, Ordering::Relaxed);
                    });
                }
            })
        });
        assert_eq!(ran.load(Ordering::Relaxed), 200);
    }

    /// A panic inside stops the spinners and reaches the caller instead of hanging the pool.
    #[test]
    fn a_panic_inside_reaches_the_caller() {
        let pool = pool(2);
        let caught = pool
            .install(|| std::panic::catch_unwind(|| keep_pool_warm(|| panic!("inside the pass"))));
        assert!(caught.is_err());
        // The pool still works afterwards.
        assert_eq!(pool.install(|| keep_pool_warm(|| 7)), 7);
    }

    #[test]
    fn outside_a_pool_it_only_runs_f() {
        assert_eq!(keep_pool_warm(|| 3), 3);
    }
}

//! The parallel walk every packed matmul shares: output row groups split across threads, and
//! within a thread the activation rows in slices that stay in L2 while all of the thread's
//! groups pass over them.

use std::ops::Range;

/// Quantized activation bytes a slice of rows may take.
const SLICE_BYTES: usize = 64 * 1024;

/// Calls `run(group, rows)` for every one of `groups` weight row groups and every slice of the
/// `m` activation rows (of `cols` values), on `threads` threads of rayon's pool. Each group is
/// handed to one thread only, so `run` may write the group's output columns without locks.
pub(crate) fn run(
    groups: usize,
    m: usize,
    cols: usize,
    threads: usize,
    run: &(dyn Fn(usize, Range<usize>) + Sync),
) {
    if groups == 0 || m == 0 {
        return;
    }
    let threads = threads.clamp(1, groups);
    let per_thread = groups.div_ceil(threads);
    // A multiple of four rows, which the kernels take at a time.
    let slice = (SLICE_BYTES / cols.max(1)).next_multiple_of(4).max(4);
    let work = |range: Range<usize>| {
        for first in (0..m).step_by(slice) {
            let rows = first..m.min(first + slice);
            for group in range.clone() {
                run(group, rows.clone());
            }
        }
    };
    let work = &work;
    rayon::in_place_scope(|scope| {
        // The calling thread takes the last range itself, so a single range never leaves it.
        let last = (groups - 1) / per_thread * per_thread;
        for first in (0..last).step_by(per_thread) {
            scope.spawn(move |_| work(first..first + per_thread));
        }
        work(last..groups);
    });
}

//! [`WeightArena`]: the memory packed weights live in, taken in large runs that Linux backs
//! with 2 MiB pages.
//!
//! Decoding reads every weight once per token, from memory. On 4 KiB pages that is a TLB miss
//! and a page walk for every 4 KiB read, hundreds of thousands per token, and the hardware
//! prefetchers stop at every page's end. On 2 MiB pages both mostly go away: with every page of
//! the process huge (`transparent_hugepage=always`), Q4_K_M decoded 1–16% faster, 10% in the
//! median pair, on a 2-core Zen 4 VM. Most distributions ship `madvise` instead, which gives
//! huge pages only to memory that asks for them, so the arena asks.
//!
//! A huge page covers an aligned 2 MiB, so a matrix in an allocation of its own would keep its
//! unaligned ends on small pages: a third of a 0.5B model's weight bytes, whose matrices are
//! 0.1–3.6 MiB each. The arena instead places a model's matrices one after another in runs of
//! 64 MiB. A run's partly used last huge page (under 2 MiB) is what that costs in memory.

use std::alloc::{self, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, PoisonError};

/// The page size a run is aligned to and advised for.
const HUGE_PAGE: usize = 2 << 20;

/// How large the runs are that a model's matrices share.
const SHARED_RUN: usize = 64 << 20;

/// Every placement's alignment: a cache line, at least every tile's own.
const LINE: usize = 64;

/// Memory for packed matrices. Matrices packed into one arena share its runs; each keeps the
/// run it lies in alive, so the arena itself can be dropped once packing is done.
pub struct WeightArena {
    /// The size of a shared run; a placement at least this large gets a run of its own size
    /// (so 0 gives every placement its own).
    run_bytes: usize,
    open: Mutex<Option<OpenRun>>,
}

/// The run placements go to next, and how much of it they have taken.
struct OpenRun {
    run: Arc<Run>,
    used: usize,
}

impl Default for WeightArena {
    fn default() -> Self {
        Self::new()
    }
}

impl WeightArena {
    /// An arena for a model's matrices, sharing runs of 64 MiB (a matrix larger than that,
    /// such as a big output head, gets a run of its own).
    pub fn new() -> Self {
        Self::with_runs(SHARED_RUN)
    }

    /// An arena that gives each matrix a run of exactly its size: for a matrix packed alone,
    /// which should not hold a run's worth of memory for matrices that never come.
    pub(crate) fn one_run_each() -> Self {
        Self::with_runs(0)
    }

    fn with_runs(run_bytes: usize) -> Self {
        Self {
            run_bytes,
            open: Mutex::new(None),
        }
    }

    /// `len` copies of `value` in this arena's memory: the tiles a matrix is packed into.
    /// `None` when `len` values would not fit in the address space (only a crafted header
    /// asks for that many).
    pub(crate) fn filled<T: Copy>(&self, value: T, len: usize) -> Option<ArenaSlice<T>> {
        const { assert!(align_of::<T>() <= LINE, "values aligned past a cache line") };
        let bytes = size_of::<T>().checked_mul(len)?;
        let (run, offset) = self.place(bytes)?;
        // SAFETY: `place` gave `bytes` bytes at `offset` inside the run, LINE-aligned, that no
        // other placement overlaps; each of the `len` writes stays inside them.
        let start = unsafe {
            let start = run.start.as_ptr().add(offset).cast::<T>();
            for i in 0..len {
                start.add(i).write(value);
            }
            NonNull::new_unchecked(start)
        };
        Some(ArenaSlice {
            start,
            len,
            _run: run,
        })
    }

    /// A run with `bytes` free at the returned offset, reserved for the caller.
    fn place(&self, bytes: usize) -> Option<(Arc<Run>, usize)> {
        // Rounded up so that the next placement starts on a cache line too.
        let bytes = bytes.checked_next_multiple_of(LINE)?;
        if bytes >= self.run_bytes {
            return Some((Arc::new(Run::new(bytes)?), 0));
        }
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(open) = open.as_mut()
            && open.run.len - open.used >= bytes
        {
            let offset = open.used;
            open.used += bytes;
            return Some((open.run.clone(), offset));
        }
        // The open run's free end stays unused: matrices are placed in load order, and a later
        // smaller one fitting there would save at most the space of one matrix per run.
        let run = Arc::new(Run::new(self.run_bytes)?);
        *open = Some(OpenRun {
            run: run.clone(),
            used: bytes,
        });
        Some((run, 0))
    }
}

/// One allocation of the arena, freed when the last slice placed in it is dropped.
struct Run {
    start: NonNull<u8>,
    len: usize,
}

// SAFETY: a run is plain memory; the slices placed in it are disjoint, each owned by one
// `ArenaSlice`, which carries its own `Send`/`Sync` bounds.
unsafe impl Send for Run {}
// SAFETY: as for `Send`: the run itself is never read or written through, only its slices.
unsafe impl Sync for Run {}

/// A dangling pointer aligned to a cache line, for a run of no bytes.
#[repr(align(64))]
struct Line;

impl Run {
    /// `None` when `len` bytes do not fit in the address space.
    fn new(len: usize) -> Option<Self> {
        if len == 0 {
            return Some(Self {
                start: NonNull::<Line>::dangling().cast(),
                len,
            });
        }
        let layout = Self::layout(len)?;
        // SAFETY: the layout's size is not zero.
        let start = NonNull::new(unsafe { alloc::alloc(layout) })
            .unwrap_or_else(|| alloc::handle_alloc_error(layout));
        advise_huge_pages(start, len);
        Some(Self { start, len })
    }

    /// Aligned to a huge page when it can hold one, so that all its whole huge pages are
    /// usable; to a cache line otherwise.
    fn layout(len: usize) -> Option<Layout> {
        let align = if len >= HUGE_PAGE { HUGE_PAGE } else { LINE };
        Layout::from_size_align(len, align).ok()
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        // A run of no bytes allocated nothing; any other was allocated with this layout.
        if let (true, Some(layout)) = (self.len > 0, Self::layout(self.len)) {
            // SAFETY: allocated in `Run::new` with this same layout, and freed only here.
            unsafe { alloc::dealloc(self.start.as_ptr(), layout) }
        }
    }
}

/// Asks Linux to back the run's whole 2 MiB pages with huge pages when they are first
/// written. Only whole pages: advising a partial one would have the kernel fault in all of
/// it, past the run's end. Advice only, so a kernel without transparent huge pages, or one
/// that refuses, leaves the run on small pages and nothing else changes.
fn advise_huge_pages(start: NonNull<u8>, len: usize) {
    let whole = len / HUGE_PAGE * HUGE_PAGE;
    #[cfg(target_os = "linux")]
    if whole > 0 {
        // SAFETY: `start` is 2 MiB-aligned whenever `len` holds a huge page (`Run::layout`),
        // and `whole` bytes from it lie inside the allocation; advice changes no contents.
        unsafe {
            libc::madvise(start.as_ptr().cast(), whole, libc::MADV_HUGEPAGE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, whole);
}

/// Values placed in a [`WeightArena`], read and written as a slice. The run they lie in lives
/// at least as long as they do.
pub(crate) struct ArenaSlice<T> {
    start: NonNull<T>,
    len: usize,
    _run: Arc<Run>,
}

// SAFETY: the slice owns its values exclusively (no other placement overlaps them), as a
// `Vec<T>` would.
unsafe impl<T: Send> Send for ArenaSlice<T> {}
// SAFETY: as for `Send`.
unsafe impl<T: Sync> Sync for ArenaSlice<T> {}

impl<T> Deref for ArenaSlice<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // SAFETY: `len` values from `start` were written in `filled` and belong to this slice.
        unsafe { std::slice::from_raw_parts(self.start.as_ptr(), self.len) }
    }
}

impl<T> DerefMut for ArenaSlice<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as for `deref`; `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.start.as_ptr(), self.len) }
    }
}

#[cfg(test)]
#[path = "weight_arena_tests.rs"]
mod tests;

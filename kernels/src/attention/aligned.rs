//! f32 buffers whose data starts on a cache line. The tiled kernels load and store their rows
//! a whole register at a time, at multiples of 64 bytes from a row's start, and the allocator
//! gives a `Vec<f32>` 16-byte alignment: from such a start every 16-lane access (and half the
//! 8-lane ones) spans two lines, and a split load takes two of the core's load slots.
//!
//! A prompt chunk widens each block of an f16 cache into f32 (`element.rs`) and reads it once
//! per tile of query vectors, so its loads are most of the chunk's. On a 2-core Intel Ice
//! Lake server VM (AVX-512, `examples/attention 2 prefill`, three runs of each build in turn),
//! a chunk of 256 tokens at a depth of 4k, GMAC/s:
//!
//! | heads | before | widened blocks on a line | and the running outputs too |
//! |---|---|---|---|
//! | Qwen2.5-0.5B (14/2×64) | 74.2–74.3 | 82.8–85.3 | 85.7 |
//! | Qwen2.5-1.5B (12/2×128) | 74.6–75.7 | 92.0–94.1 | 93.1–94.0 |
//!
//! The AVX2 kernel on the same CPU: the 0.5B's heads as before (69.9–71.3), the 1.5B's
//! 71.7 → 74.2–76.2. Whole files read a prompt 4k deep faster in most pairs of runs taken in
//! turn, from −5% to +28% a pair (`hearth bench`; docs/inference.md §3.1).

use std::ops::{Deref, DerefMut};

/// f32 in a cache line: the most a start ever moves.
const LINE: usize = 64 / size_of::<f32>();

/// Makes `buf` hold `len` f32 from a cache line on, new ones zero, and answers where that line
/// begins, in elements. What `buf` held may no longer lie at the answer (a grown buffer can
/// move).
pub(super) fn lines_in(buf: &mut Vec<f32>, len: usize) -> usize {
    buf.resize(len + LINE, 0.0);
    // `align_offset` may answer "cannot" (`usize::MAX`); the data then starts unaligned, in
    // the `LINE` elements to spare.
    buf.as_ptr().align_offset(64).min(LINE)
}

/// f32 starting on a cache line, as many as [`Lines::zeroed`] was asked for.
#[derive(Debug)]
pub(super) struct Lines {
    buf: Vec<f32>,
    start: usize,
}

impl Lines {
    pub(super) fn zeroed(len: usize) -> Self {
        let mut buf = Vec::new();
        let start = lines_in(&mut buf, len);
        Self { buf, start }
    }

    fn span(&self) -> std::ops::Range<usize> {
        self.start..self.start + self.buf.len() - LINE
    }
}

impl Deref for Lines {
    type Target = [f32];

    fn deref(&self) -> &[f32] {
        &self.buf[self.span()]
    }
}

impl DerefMut for Lines {
    fn deref_mut(&mut self) -> &mut [f32] {
        let span = self.span();
        &mut self.buf[span]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_start_on_a_cache_line_and_hold_zeros_of_the_length_asked() {
        for len in [0, 1, 15, 16, 17, 7 * 64, 1000] {
            let mut lines = Lines::zeroed(len);
            assert_eq!(lines.len(), len);
            assert_eq!(lines.as_ptr() as usize % 64, 0, "length {len}");
            assert!(lines.iter().all(|&x| x == 0.0));
            lines
                .iter_mut()
                .enumerate()
                .for_each(|(i, x)| *x = i as f32);
            assert_eq!(lines.last().copied(), len.checked_sub(1).map(|i| i as f32));
        }
    }
}

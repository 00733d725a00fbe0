//! The machine's memory read bandwidth: the roof that decoding, which reads every weight once
//! per token, works under.

use std::time::Instant;

use crate::weight_arena::{ArenaSlice, WeightArena};

/// Read bandwidth in bytes/s, measured on a buffer of its own (see [`BandwidthProbe`]).
pub fn measure_bandwidth(threads: usize) -> f64 {
    BandwidthProbe::new().measure(threads)
}

/// A 256 MiB buffer, far past any cache, kept to measure the read bandwidth again and again:
/// a caller that measures beside other work (`hearth bench`, beside each decode) allocates it
/// once, and knows the [`bytes`](Self::bytes) it adds to the process's memory.
pub struct BandwidthProbe {
    /// On the pages packed weights lie on (huge ones where Linux gives them), so that the
    /// bound is the one decoding's reads work under: on small pages the same sums read 8–15%
    /// slower (2-core Zen 4 VM), a bound that decoding on huge pages could beat.
    words: ArenaSlice<u64>,
}

impl BandwidthProbe {
    /// Allocates and writes the buffer, so that it is resident before the first measure.
    pub fn new() -> Self {
        let Some(mut words) = WeightArena::one_run_each().filled(0u64, (256 << 20) / 8) else {
            unreachable!("256 MiB fits in any address space hearth runs in")
        };
        for (i, word) in words.iter_mut().enumerate() {
            *word = i as u64;
        }
        Self { words }
    }

    /// The buffer's size in bytes.
    pub fn bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// Read bandwidth in bytes/s: the best of a few sums over the buffer, split over `threads`
    /// threads as decode splits its weights (one core alone reads far less than the memory
    /// gives: on a 2-core VM, 14–17 GB/s against 23–28).
    pub fn measure(&self, threads: usize) -> f64 {
        let part = self.words.len().div_ceil(threads.max(1));
        let mut best = f64::MAX;
        let mut sink = 0u64;
        for _ in 0..3 {
            let t = Instant::now();
            let sums: Vec<u64> = std::thread::scope(|scope| {
                let handles: Vec<_> = self
                    .words
                    .chunks(part)
                    .map(|part| scope.spawn(move || sum_words(part)))
                    .collect();
                // A thread that panicked summed nothing; the figure is only a guide.
                handles.into_iter().map(|h| h.join().unwrap_or(0)).collect()
            });
            sink = sums.iter().fold(sink, |x, y| x.wrapping_add(*y));
            best = best.min(t.elapsed().as_secs_f64());
        }
        std::hint::black_box(sink);
        self.bytes() as f64 / best
    }
}

impl Default for BandwidthProbe {
    fn default() -> Self {
        Self::new()
    }
}

/// Eight independent running sums, so the loop is bound by memory, not by one add chain.
fn sum_words(words: &[u64]) -> u64 {
    let mut acc = [0u64; 8];
    for chunk in words.chunks_exact(8) {
        for (a, v) in acc.iter_mut().zip(chunk) {
            *a = a.wrapping_add(*v);
        }
    }
    acc.iter().fold(0u64, |x, y| x.wrapping_add(*y))
}

#[cfg(test)]
mod tests {
    use super::sum_words;

    #[test]
    fn the_sum_covers_every_word() {
        let words: Vec<u64> = (1..=64).collect();
        assert_eq!(sum_words(&words), 64 * 65 / 2);
    }
}

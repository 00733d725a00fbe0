//! Activation rows quantized to Q8_0 blocks, the left operand of every packed kernel.

use std::ops::Range;

use half::f16;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(test)]
mod tests;

/// Values per block, in GGUF's Q8_0 and Q4_0 alike.
pub(crate) const BLOCK: usize = 32;

/// Activation rows quantized to Q8_0 the way ggml does it (see [`quantize_blocks`]), one
/// entry per row and block.
pub(crate) struct QuantizedRows {
    pub blocks: usize,
    /// The 32 values of each block as 8 little-endian words of 4 signed bytes.
    pub words: Vec<[i32; BLOCK / 4]>,
    pub scales: Vec<f32>,
    /// `-128 · Σ values`: the correction for the VNNI Q8_0 weights' offset of 128; a sixteenth
    /// of it is the correction for Q4_0's offset of 8.
    pub offsets: Vec<i32>,
    /// For each half of the block (values 0..16 and 16..32), two i16 sums packed in a word as
    /// `vpmaddubsw` leaves them: the low one `Σ a[4q] + a[4q + 1]` and the high one
    /// `Σ a[4q + 2] + a[4q + 3]` over the half's four words `q`. Q6_K subtracts 32 times these
    /// from its unsigned products (each at most 8 · 127 = 1016, so 32 times fits i16).
    pub pair_sums: Vec<[i32; 2]>,
}

/// `Σ a` over one half of an activation block, from the two i16 pair sums packed in `pairs`
/// (see [`QuantizedRows::pair_sums`]).
pub(crate) fn half_sum(pairs: i32) -> i32 {
    i32::from(pairs as i16) + (pairs >> 16)
}

impl QuantizedRows {
    /// Quantizes the `m` rows of `lhs`, spread over `threads` when there are rows enough.
    pub fn quantize(lhs: &[f32], m: usize, cols: usize, threads: usize) -> Self {
        let blocks = cols / BLOCK;
        let mut rows = Self {
            blocks,
            words: vec![[0; BLOCK / 4]; m * blocks],
            scales: vec![0.0; m * blocks],
            offsets: vec![0; m * blocks],
            pair_sums: vec![[0; 2]; m * blocks],
        };
        if m < 2 * QUANTIZE_MIN_ROWS_PER_THREAD || threads < 2 {
            quantize_blocks(lhs, rows.entries());
            return rows;
        }
        let per_thread = m.div_ceil(threads) * blocks;
        rayon::in_place_scope(|scope| {
            let mut rest = rows.entries();
            for lhs in lhs.chunks(per_thread * BLOCK) {
                let part;
                (part, rest) = rest.split_at(lhs.len() / BLOCK);
                scope.spawn(move |_| quantize_blocks(lhs, part));
            }
        });
        rows
    }

    /// The words, scales, offsets and pair sums of activation rows `rows`, as a micro-kernel
    /// reads them: row `rows.start + r`'s block `b` at `r · blocks + b`.
    pub fn rows(&self, rows: Range<usize>) -> RowSlices<'_> {
        let at = rows.start * self.blocks..rows.end * self.blocks;
        (
            &self.words[at.clone()],
            &self.scales[at.clone()],
            &self.offsets[at.clone()],
            &self.pair_sums[at],
        )
    }

    /// Every block's entries, to be written.
    fn entries(&mut self) -> Entries<'_> {
        Entries {
            words: &mut self.words,
            scales: &mut self.scales,
            offsets: &mut self.offsets,
            pair_sums: &mut self.pair_sums,
        }
    }
}

/// A run of activation rows' entries in each of [`QuantizedRows`]' outputs (see
/// [`QuantizedRows::rows`]).
pub(crate) type RowSlices<'a> = (&'a [[i32; BLOCK / 4]], &'a [f32], &'a [i32], &'a [[i32; 2]]);

/// Below this many rows per thread, spawning costs more than quantizing.
const QUANTIZE_MIN_ROWS_PER_THREAD: usize = 8;

/// The entries of a run of consecutive blocks in each of [`QuantizedRows`]' outputs.
struct Entries<'a> {
    words: &'a mut [[i32; BLOCK / 4]],
    scales: &'a mut [f32],
    offsets: &'a mut [i32],
    pair_sums: &'a mut [[i32; 2]],
}

/// A 32-value block of the input and the entries it quantizes into.
type BlockSlots<'a> = (
    &'a [f32],
    &'a mut [i32; BLOCK / 4],
    &'a mut f32,
    &'a mut i32,
    &'a mut [i32; 2],
);

impl<'a> Entries<'a> {
    /// The first `blocks` entries, and the rest.
    fn split_at(self, blocks: usize) -> (Self, Self) {
        let (words, words_rest) = self.words.split_at_mut(blocks);
        let (scales, scales_rest) = self.scales.split_at_mut(blocks);
        let (offsets, offsets_rest) = self.offsets.split_at_mut(blocks);
        let (pair_sums, pair_sums_rest) = self.pair_sums.split_at_mut(blocks);
        (
            Self {
                words,
                scales,
                offsets,
                pair_sums,
            },
            Self {
                words: words_rest,
                scales: scales_rest,
                offsets: offsets_rest,
                pair_sums: pair_sums_rest,
            },
        )
    }

    /// Each whole block of `lhs` with its entry of each output.
    fn slots(self, lhs: &'a [f32]) -> impl Iterator<Item = BlockSlots<'a>> {
        lhs.chunks_exact(BLOCK)
            .zip(self.words)
            .zip(self.scales)
            .zip(self.offsets)
            .zip(self.pair_sums)
            .map(|((((block, words), scale), offset), pairs)| (block, words, scale, offset, pairs))
    }
}

/// ggml's Q8_0 quantization (`quantize_row_q8_0`) of consecutive 32-value blocks of `lhs`, on
/// AVX2 where the CPU has it, with the same results to the bit (see [`quantize_blocks_scalar`]).
fn quantize_blocks(lhs: &[f32], entries: Entries) {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        unsafe { avx2::quantize_blocks(lhs, entries) };
        return;
    }
    quantize_blocks_scalar(lhs, entries);
}

/// A block's scale from its largest magnitude, as ggml computes it: the f32 `inverse` that
/// quantizes, and the scale stored, rounded to f16 (its block format) as ggml does.
fn block_scale(amax: f32) -> (f32, f32) {
    let exact = amax / 127.0;
    let inverse = if exact == 0.0 { 0.0 } else { 1.0 / exact };
    (inverse, f16::from_f32(exact).to_f32())
}

/// [`quantize_blocks`] one value at a time: the portable path, and the reference the AVX2 one
/// is held to.
fn quantize_blocks_scalar(lhs: &[f32], entries: Entries) {
    for (block, words, scale, offset, pairs) in entries.slots(lhs) {
        let amax = block.iter().fold(0f32, |a, x| a.max(x.abs()));
        // ggml rounds the stored scale to f16 (its block format) but quantizes with the f32
        // one; doing the same keeps results identical to candle's and llama.cpp's Q8_0 paths.
        let inverse;
        (inverse, *scale) = block_scale(amax);
        let mut q = [0i8; BLOCK];
        for (q, x) in q.iter_mut().zip(block) {
            *q = (x * inverse).round() as i8;
        }
        for (word, four) in words.iter_mut().zip(q.chunks_exact(4)) {
            *word =
                i32::from_le_bytes([four[0] as u8, four[1] as u8, four[2] as u8, four[3] as u8]);
        }
        *offset = -128 * q.iter().map(|&v| i32::from(v)).sum::<i32>();
        for (pair, half) in pairs.iter_mut().zip(q.chunks_exact(BLOCK / 2)) {
            let sum = |first: usize| -> i16 {
                half.chunks_exact(4)
                    .map(|four| i16::from(four[first]) + i16::from(four[first + 1]))
                    .sum()
            };
            let (low, high) = (sum(0).to_le_bytes(), sum(2).to_le_bytes());
            *pair = i32::from_le_bytes([low[0], low[1], high[0], high[1]]);
        }
    }
}

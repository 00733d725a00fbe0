//! Activation rows quantized to 8-bit blocks, the left operand of every packed kernel, the way
//! ggml quantizes them for the weight format's dot product (see [`Scheme`]).

use std::ops::Range;

use half::f16;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(test)]
mod tests;

/// Values per block, in GGUF's Q8_0 and Q4_0 alike.
pub(crate) const BLOCK: usize = 32;

/// Values per K-quant super-block, which share one activation scale in [`Scheme::Q8_K`].
pub(crate) const SUPER: usize = 256;

/// How a matmul's activations are quantized: as ggml does for the weight format, so that the
/// integer sums are the ones llama.cpp takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[expect(non_camel_case_types, reason = "ggml's names for the block formats")]
pub(crate) enum Scheme {
    /// ggml's Q8_0, for the 32-value formats: a scale per block, `amax / 127` rounded to f16,
    /// the values rounded half away from zero.
    Q8_0,
    /// ggml's Q8_K, for the K-quants: one f32 scale per 256 values, `−max / 127` where `max`
    /// is the value of largest magnitude (the first, on a tie), which so quantizes to −127;
    /// the values rounded half to even. Every block of a super-block carries that scale, so a
    /// kernel can sum the whole super-block in integers and scale it once.
    Q8_K,
}

/// Activation rows quantized the way ggml does it for the weight format (see [`Scheme`] and
/// [`quantize_blocks`]), one entry per row and 32-value block.
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
    /// Quantizes the `m` rows of `lhs` by `scheme`, spread over `threads` when there are rows
    /// enough. [`Scheme::Q8_K`] needs `cols` a multiple of 256, as every K-quant matrix has.
    pub fn quantize(lhs: &[f32], m: usize, cols: usize, threads: usize, scheme: Scheme) -> Self {
        debug_assert!(scheme == Scheme::Q8_0 || cols.is_multiple_of(SUPER));
        let blocks = cols / BLOCK;
        let mut rows = Self {
            blocks,
            words: vec![[0; BLOCK / 4]; m * blocks],
            scales: vec![0.0; m * blocks],
            offsets: vec![0; m * blocks],
            pair_sums: vec![[0; 2]; m * blocks],
        };
        if m < 2 * QUANTIZE_MIN_ROWS_PER_THREAD || threads < 2 {
            quantize_blocks(lhs, rows.entries(), scheme);
            return rows;
        }
        let per_thread = m.div_ceil(threads) * blocks;
        rayon::in_place_scope(|scope| {
            let mut rest = rows.entries();
            for lhs in lhs.chunks(per_thread * BLOCK) {
                let part;
                (part, rest) = rest.split_at(lhs.len() / BLOCK);
                scope.spawn(move |_| quantize_blocks(lhs, part, scheme));
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

#[cfg(test)]
impl QuantizedRows {
    /// Entry `at`'s 32 quantized values, for the formats' scalar references.
    pub fn values(&self, at: usize) -> [i32; BLOCK] {
        let bytes = self.words[at].map(i32::to_le_bytes);
        std::array::from_fn(|i| i32::from(bytes[i / 4][i % 4] as i8))
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

/// ggml's quantization of consecutive 32-value blocks of `lhs` by `scheme`
/// (`quantize_row_q8_0` or `quantize_row_q8_K`), on AVX2 where the CPU has it, with the same
/// results to the bit (see [`quantize_blocks_scalar`]).
fn quantize_blocks(lhs: &[f32], entries: Entries, scheme: Scheme) {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        unsafe { avx2::quantize_blocks(lhs, entries, scheme) };
        return;
    }
    quantize_blocks_scalar(lhs, entries, scheme);
}

/// A block's scale from its largest magnitude, as ggml computes it: the f32 `inverse` that
/// quantizes, and the scale stored, rounded to f16 (its block format) as ggml does.
fn block_scale(amax: f32) -> (f32, f32) {
    let exact = amax / 127.0;
    let inverse = if exact == 0.0 { 0.0 } else { 1.0 / exact };
    (inverse, f16::from_f32(exact).to_f32())
}

/// A super-block's scale from its value of largest magnitude `max` (0 when all are 0), as
/// ggml's Q8_K computes it: the `inverse` that quantizes (`−127 / max`, so that `max` becomes
/// −127) and the f32 scale stored, its reciprocal.
fn super_scale(max: f32) -> (f32, f32) {
    if max == 0.0 {
        return (0.0, 0.0);
    }
    let inverse = -127.0 / max;
    (inverse, 1.0 / inverse)
}

/// [`quantize_blocks`] one value at a time: the portable path, and the reference the AVX2 one
/// is held to.
fn quantize_blocks_scalar(lhs: &[f32], entries: Entries, scheme: Scheme) {
    let mut slots = entries.slots(lhs);
    match scheme {
        Scheme::Q8_0 => {
            for slot in slots {
                let amax = slot.0.iter().fold(0f32, |a, x| a.max(x.abs()));
                // ggml rounds the stored scale to f16 (its block format) but quantizes with
                // the f32 one; doing the same keeps results identical to candle's and
                // llama.cpp's Q8_0 paths.
                let (inverse, scale) = block_scale(amax);
                fill_scalar(slot, inverse, scale, f32::round);
            }
        }
        Scheme::Q8_K => {
            for span in lhs.chunks_exact(SUPER) {
                // NaN compares false and is passed over, as in ggml's loop.
                let (mut amax, mut max) = (0f32, 0f32);
                for &x in span {
                    if x.abs() > amax {
                        (amax, max) = (x.abs(), x);
                    }
                }
                let (inverse, scale) = super_scale(max);
                for slot in slots.by_ref().take(SUPER / BLOCK) {
                    fill_scalar(slot, inverse, scale, f32::round_ties_even);
                }
            }
        }
    }
}

/// Writes one block's entries: its values times `inverse`, rounded by `round` (NaN to 0; no
/// value of a block or span can pass ±127 times its largest magnitude), and `scale`.
fn fill_scalar(
    (block, words, scale_slot, offset, pairs): BlockSlots,
    inverse: f32,
    scale: f32,
    round: fn(f32) -> f32,
) {
    *scale_slot = scale;
    let mut q = [0i8; BLOCK];
    for (q, x) in q.iter_mut().zip(block) {
        *q = round(x * inverse) as i8;
    }
    for (word, four) in words.iter_mut().zip(q.chunks_exact(4)) {
        *word = i32::from_le_bytes([four[0] as u8, four[1] as u8, four[2] as u8, four[3] as u8]);
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

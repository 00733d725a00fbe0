//! Where the Q5_0, Q5_1 and Q5_K tiles keep their 5-bit values: the two byte layouts, one per
//! kernel, and the AVX2 kernels' reader of theirs.
//!
//! Each of these tiles holds a block's 32 values of 16 rows (a Q5_K tile, each of its eight
//! sub-blocks') in 256 bytes of `qs` and 64 of `qh`, as many as the file's nibbles and fifth
//! bits. Byte `b` (0..16) of a row's block sits in `qs` where [`crate::PackedQ4_0`] keeps it
//! (word `q = b / 4`, lane `row * 4 + b % 4`) and carries values `b` and `b + 16`;
//! `qh[row * 4 + t]` carries the bits of the four bytes `4q + t` that `qs` has no room for. How
//! the ten bits of a byte's two values are split is the layout's:
//!
//! - [`FiveBitLayout::FifthBits`] (AVX-512): `qs` holds the two low nibbles, as the file does,
//!   and `qh` the fifth bits, bit `q` for value `4q + t` and bit `4 + q` for value `4q + 16 + t`
//!   (see `fifth_bits`); with `vpternlogd` a fifth bit merges in one instruction.
//! - [`FiveBitLayout::TopPairs`] (AVX2): `qs` holds value `b` whole in bits 0–4 and the low
//!   three bits of value `b + 16` in bits 5–7; `qh` holds the top two bits of value `b + 16` in
//!   bits `2q` and `2q + 1`. Unpacking a word takes six instructions per register where the
//!   fifth bits took nine (value `b` is one AND), and the AVX2 kernels, nearly bound by that
//!   arithmetic, multiply faster (docs/inference.md §3.1).

use crate::activations::BLOCK;
use crate::isa::Isa;
use crate::tiled::TILE_ROWS;

/// How a tile splits each `qs` byte's two 5-bit values between `qs` and `qh` (see above).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FiveBitLayout {
    FifthBits,
    TopPairs,
}

/// Bytes of `qs` per tile.
const QS: usize = TILE_ROWS * BLOCK / 2;
#[cfg(target_arch = "x86_64")]
const _: () = assert!(QS == crate::avx2_frame::NIBBLE_BYTES);
/// Bytes of `qh` per tile.
const QH: usize = TILE_ROWS * BLOCK / 8;

impl FiveBitLayout {
    /// The layout `isa`'s kernel reads.
    pub fn for_isa(isa: Isa) -> Self {
        match isa {
            Isa::Avx512Vnni => Self::FifthBits,
            Isa::AvxVnni | Isa::Avx2 => Self::TopPairs,
        }
    }

    /// Stores `values`, the 32 values (0..=31) of `lane`'s block.
    pub fn store(self, qs: &mut [u8; QS], qh: &mut [u8; QH], lane: usize, values: &[u8; BLOCK]) {
        for b in 0..BLOCK / 2 {
            let (q, top) = (b / 4, lane * 4 + b % 4);
            let (low, high) = (values[b], values[b + 16]);
            match self {
                Self::FifthBits => {
                    qs[qs_index(lane, b)] = (low & 0x0f) | (high << 4);
                    qh[top] |= (low >> 4) << q | (high >> 4) << (4 + q);
                }
                Self::TopPairs => {
                    qs[qs_index(lane, b)] = low | (high << 5);
                    qh[top] |= (high >> 3) << (2 * q);
                }
            }
        }
    }

    /// The unsigned value `v` (0..32) of `lane`'s block.
    pub fn value(self, qs: &[u8; QS], qh: &[u8; QH], lane: usize, v: usize) -> u8 {
        let b = v % (BLOCK / 2);
        let (q, byte, top) = (b / 4, qs[qs_index(lane, b)], qh[lane * 4 + b % 4]);
        let high = v >= BLOCK / 2;
        match self {
            Self::FifthBits if high => (byte >> 4) | ((top >> (4 + q)) & 1) << 4,
            Self::FifthBits => (byte & 0x0f) | ((top >> q) & 1) << 4,
            Self::TopPairs if high => (byte >> 5) | ((top >> (2 * q)) & 3) << 3,
            Self::TopPairs => byte & 0x1f,
        }
    }
}

/// The 32 values of a GGUF Q5_0 or Q5_1 block from its little-endian u32 of fifth bits and
/// its 16 bytes of nibbles (value `v`'s low bits in byte `v % 16`, the high nibble for
/// `v >= 16`).
pub(crate) fn gguf_values(fifths: u32, nibbles: &[u8]) -> [u8; BLOCK] {
    std::array::from_fn(|v| {
        let nibble = (nibbles[v % 16] >> (v / 16 * 4)) & 0x0f;
        nibble | (((fifths >> v) & 1) as u8) << 4
    })
}

/// Where byte `b` (0..16) of `lane`'s block lies in a tile's `qs`.
fn qs_index(lane: usize, b: usize) -> usize {
    (b / 4 * TILE_ROWS + lane) * 4 + b % 4
}

/// Word `Q`'s values (0..=31) from a [`FiveBitLayout::TopPairs`] tile: `raw` is the word's 64
/// bytes of `qs` and `tops` the tile's `qh` (rows 0–7, then 8–15); returns the values of
/// columns `4Q + t` and of columns `4Q + 16 + t`.
///
/// The top pair of word `Q` moves from bits `2Q, 2Q + 1` to bits 3 and 4 with a 16-bit shift;
/// the bits it carries across a byte's edge land outside bits 3–4, and the mask drops them.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
pub(crate) fn top_pairs_word<const Q: usize>(
    raw: [std::arch::x86_64::__m256i; 2],
    tops: [std::arch::x86_64::__m256i; 2],
) -> WordValues {
    use std::arch::x86_64::*;
    let (five, three, pair) = (
        _mm256_set1_epi8(0x1f),
        _mm256_set1_epi8(0x07),
        _mm256_set1_epi8(0x18),
    );
    let at_three = |tops: __m256i| match Q {
        0 => _mm256_slli_epi16::<3>(tops),
        1 => _mm256_slli_epi16::<1>(tops),
        2 => _mm256_srli_epi16::<1>(tops),
        _ => _mm256_srli_epi16::<3>(tops),
    };
    let low = raw.map(|raw| _mm256_and_si256(raw, five));
    let high = [0, 1].map(|h| {
        _mm256_or_si256(
            _mm256_and_si256(_mm256_srli_epi16::<5>(raw[h]), three),
            _mm256_and_si256(at_three(tops[h]), pair),
        )
    });
    (low, high)
}

/// A word's values: those of columns `4q + t`, then of columns `4q + 16 + t` (see
/// [`top_pairs_word`]).
#[cfg(target_arch = "x86_64")]
pub(crate) type WordValues = crate::avx2_frame::Nibbles;

/// The four words of a [`FiveBitLayout::TopPairs`] block, unpacked: `qs` is its 256 bytes,
/// 32-byte aligned, and `tops` its `qh`. `each_word(q)` runs before word `q` is loaded (the
/// Q5_0 and Q5_1 kernels ask for a word's share of the lines ahead there).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
pub(crate) fn top_pairs_words(
    qs: &[u8; QS],
    tops: [std::arch::x86_64::__m256i; 2],
    each_word: impl Fn(usize),
) -> [WordValues; 4] {
    let load = |q: usize| {
        each_word(q);
        // SAFETY: this function has AVX2; `qs` is the caller's, 32-byte aligned.
        unsafe { crate::avx2_frame::load_word(qs, q) }
    };
    [
        top_pairs_word::<0>(load(0), tops),
        top_pairs_word::<1>(load(1), tops),
        top_pairs_word::<2>(load(2), tops),
        top_pairs_word::<3>(load(3), tops),
    ]
}

/// Adds a [`FiveBitLayout::TopPairs`] block's values times activation block `block` of `R`
/// rows (`acts`: the rows' words, a row every `blocks` entries, and `block`) to `sums`, as `P`
/// sums byte products (`[row][half]`, half 0 the tile's rows 0–7): `qs` and `qh` are the
/// block's, 32-byte aligned. `each_word(q)` runs before word `q` is loaded. (The sums are the
/// caller's, not returned: returned, the AVX2 Q5_1 kernel ran 10–17% slower.)
///
/// On AVX2 the tile's four words are unpacked first, then each row goes over them: a prompt's
/// rows read the values from L1 and keep their sums in registers. Word by word, with every
/// row's sums live, a prompt ran 16% slower (Zen 2): the compiler spilled the values instead.
/// AVX-VNNI goes word by word (see `ByteProducts::UNPACK_FIRST`).
///
/// # Safety
/// Runs inlined into a kernel with AVX2 and what `P` needs; `qs` and `qh` are 32-byte
/// aligned.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) unsafe fn top_pairs_sums<const R: usize, P: crate::byte_products::ByteProducts>(
    (qs, qh): (&[u8; QS], &[u8; QH]),
    acts: (&[[i32; 8]], usize, usize),
    each_word: impl Fn(usize),
    sums: &mut [[std::arch::x86_64::__m256i; 2]; R],
) {
    use crate::avx2_frame::{add_unpacked_rows, add_word_rows, load_word};
    use std::arch::x86_64::*;
    // SAFETY: the caller's kernel has the features; `qh` is 64 bytes, 32-byte aligned: rows
    // 0–7, then rows 8–15.
    unsafe {
        let qh = qh.as_ptr().cast::<__m256i>();
        let tops = [_mm256_load_si256(qh), _mm256_load_si256(qh.add(1))];
        if P::UNPACK_FIRST {
            let values = top_pairs_words(qs, tops, each_word);
            add_unpacked_rows::<R, P>(sums, acts, &values);
        } else {
            // Each word by its own constant (its shifts are immediates), as `top_pairs_words`;
            // no closure, which would have none of the kernel's features.
            each_word(0);
            let values = top_pairs_word::<0>(load_word(qs, 0), tops);
            add_word_rows::<R, P>(sums, acts, 0, &values);
            each_word(1);
            let values = top_pairs_word::<1>(load_word(qs, 1), tops);
            add_word_rows::<R, P>(sums, acts, 1, &values);
            each_word(2);
            let values = top_pairs_word::<2>(load_word(qs, 2), tops);
            add_word_rows::<R, P>(sums, acts, 2, &values);
            each_word(3);
            let values = top_pairs_word::<3>(load_word(qs, 3), tops);
            add_word_rows::<R, P>(sums, acts, 3, &values);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::Lcg;

    /// Both layouts give back every value stored, on random blocks in every lane.
    #[test]
    fn each_layout_returns_the_values_it_stored() {
        let mut rng = Lcg(5);
        for layout in [FiveBitLayout::FifthBits, FiveBitLayout::TopPairs] {
            let (mut qs, mut qh) = ([0u8; QS], [0u8; QH]);
            let mut want = vec![[0u8; BLOCK]; TILE_ROWS];
            for (lane, want) in want.iter_mut().enumerate() {
                *want = std::array::from_fn(|_| (rng.next() % 32) as u8);
                layout.store(&mut qs, &mut qh, lane, want);
            }
            for (lane, want) in want.iter().enumerate() {
                let got: Vec<u8> = (0..BLOCK)
                    .map(|v| layout.value(&qs, &qh, lane, v))
                    .collect();
                assert_eq!(got, want, "{layout:?} lane {lane}");
            }
        }
    }

    /// The AVX2 reader agrees with [`FiveBitLayout::value`] on every word, lane and value.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_avx2_reader_agrees_with_the_scalar_one() {
        use std::arch::x86_64::*;
        if !Isa::Avx2.available() {
            return;
        }
        let layout = FiveBitLayout::TopPairs;
        let mut rng = Lcg(9);
        let (mut qs, mut qh) = ([0u8; QS], [0u8; QH]);
        for lane in 0..TILE_ROWS {
            let values = std::array::from_fn(|_| (rng.next() % 32) as u8);
            layout.store(&mut qs, &mut qh, lane, &values);
        }
        let load = |bytes: &[u8]| {
            // SAFETY: 32 bytes, unaligned load; AVX is checked above.
            unsafe { _mm256_loadu_si256(bytes.as_ptr().cast()) }
        };
        let tops = [load(&qh[..32]), load(&qh[32..])];
        let word = |q: usize| [load(&qs[q * 64..]), load(&qs[q * 64 + 32..])];
        // SAFETY: AVX2 is checked above.
        let words = unsafe {
            [
                top_pairs_word::<0>(word(0), tops),
                top_pairs_word::<1>(word(1), tops),
                top_pairs_word::<2>(word(2), tops),
                top_pairs_word::<3>(word(3), tops),
            ]
        };
        for (q, (low, high)) in words.into_iter().enumerate() {
            for (half, column) in [(low, 0), (high, 16)] {
                let mut bytes = [0u8; 64];
                // SAFETY: 64 bytes written by two unaligned stores.
                unsafe {
                    _mm256_storeu_si256(bytes.as_mut_ptr().cast(), half[0]);
                    _mm256_storeu_si256(bytes[32..].as_mut_ptr().cast(), half[1]);
                }
                for (i, &got) in bytes.iter().enumerate() {
                    let (lane, t) = (i / 4, i % 4);
                    let want = layout.value(&qs, &qh, lane, column + 4 * q + t);
                    assert_eq!(
                        got,
                        want,
                        "word {q} lane {lane} column {}",
                        column + 4 * q + t
                    );
                }
            }
        }
    }
}

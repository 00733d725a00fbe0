//! 2-bit planes: the low bits of Q2_K and Q3_K values, in ggml's order and in a tile's.
//!
//! In a GGUF super-block both formats keep 64 bytes `qs`, four 2-bit values per byte: value
//! `v` (0..256) sits in byte `32 · (v / 128) + v % 32` at bits `2 · (v % 128 / 32)`.
//!
//! In a tile, each 32-value sub-block (one activation block) of 16 rows takes 128 bytes, two
//! 64-byte words `w` of [`crate::PackedQ4_0`]'s shape (four bytes per row, rows 0–7 in the
//! first 32 bytes, 8–15 in the second). Byte `t` of `row`'s four in word `w` holds values
//! `b + 8k` at bits `2k`, for `b = 4w + t` and `k` = 0..4. Shifted right by `2k` and masked,
//! a word gives the values of activation word `w + 2k` byte for byte, so one load feeds four
//! `vpmaddubsw`; `k` < 2 is the sub-block's first 16 values, `k` ≥ 2 its second.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use crate::activations::BLOCK;
use crate::tiled::TILE_ROWS;

/// Bytes of one sub-block's 2-bit plane in a tile: 16 rows × 32 values × 2 bits.
pub(crate) const PLANE_BYTES: usize = TILE_ROWS * BLOCK / 4;

/// The 2-bit value `v` (0..256) of a GGUF super-block's 64 bytes `qs`.
pub(crate) fn ggml_value(qs: &[u8], v: usize) -> u8 {
    (qs[32 * (v / 128) + v % 32] >> (2 * (v % 128 / 32))) & 3
}

/// Where value `v` (0..32) of `lane`'s sub-block lies in a tile's plane: the byte and the
/// shift of its two bits.
pub(crate) fn plane_place(lane: usize, v: usize) -> (usize, u32) {
    let (b, k) = (v % 8, v / 8);
    ((b / 4 * TILE_ROWS + lane) * 4 + b % 4, 2 * k as u32)
}

/// Sets value `v` (0..32, at most 3) of `lane`'s sub-block in a zeroed tile plane.
pub(crate) fn set(plane: &mut [u8; PLANE_BYTES], lane: usize, v: usize, value: u8) {
    let (at, shift) = plane_place(lane, v);
    plane[at] |= (value & 3) << shift;
}

/// Value `v` (0..32) of `lane`'s sub-block in a tile's plane.
pub(crate) fn get(plane: &[u8; PLANE_BYTES], lane: usize, v: usize) -> u8 {
    let (at, shift) = plane_place(lane, v);
    (plane[at] >> shift) & 3
}

/// The values at bits `2k` (`k` = 0..4) of each byte of a plane word, as bytes 0..=3. The
/// 16-bit shift carries bits across bytes only above bit 1, which the mask drops.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
pub(crate) fn values256(raw: __m256i, k: usize) -> __m256i {
    let shifted = match k {
        0 => raw,
        1 => _mm256_srli_epi16(raw, 2),
        2 => _mm256_srli_epi16(raw, 4),
        _ => _mm256_srli_epi16(raw, 6),
    };
    _mm256_and_si256(shifted, _mm256_set1_epi8(3))
}

/// [`values256`] on a whole 64-byte plane word: all sixteen rows at once.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(crate) fn values512(raw: __m512i, k: usize) -> __m512i {
    let shifted = match k {
        0 => raw,
        1 => _mm512_srli_epi16(raw, 2),
        2 => _mm512_srli_epi16(raw, 4),
        _ => _mm512_srli_epi16(raw, 6),
    };
    _mm512_and_si512(shifted, _mm512_set1_epi8(3))
}

#[cfg(test)]
mod tests {
    use super::{PLANE_BYTES, TILE_ROWS, get, ggml_value, plane_place, set};

    /// Every value of every row has its own two bits, and reads back as written.
    #[test]
    fn every_value_of_a_sub_block_has_its_own_bits() {
        let mut seen = [0u8; PLANE_BYTES];
        for lane in 0..TILE_ROWS {
            for v in 0..32 {
                let (at, shift) = plane_place(lane, v);
                assert_eq!(seen[at] & (3 << shift), 0, "lane {lane} value {v}");
                seen[at] |= 3 << shift;
            }
        }
        assert!(seen.iter().all(|&b| b == 0xff));
        let mut plane = [0u8; PLANE_BYTES];
        for lane in 0..TILE_ROWS {
            for v in 0..32 {
                set(&mut plane, lane, v, ((lane + v) % 4) as u8);
            }
        }
        for lane in 0..TILE_ROWS {
            for v in 0..32 {
                assert_eq!(get(&plane, lane, v), ((lane + v) % 4) as u8);
            }
        }
    }

    /// Byte `t` of a row's word `w` feeds activation word `w + 2k` from its bits `2k`.
    #[test]
    fn a_word_shifted_by_2k_lines_up_with_activation_word_w_plus_2k() {
        for lane in 0..TILE_ROWS {
            for v in 0..32 {
                let (at, shift) = plane_place(lane, v);
                let (w, t) = (at / (TILE_ROWS * 4), at % 4);
                assert_eq!(at % (TILE_ROWS * 4) / 4, lane);
                assert_eq!(w as u32 + shift, v as u32 / 4, "activation word");
                assert_eq!(t, v % 4, "byte within the word");
            }
        }
    }

    #[test]
    fn ggml_values_follow_dequantize_row_q2_k() {
        let mut qs = [0u8; 64];
        // Value 131: second half (byte 32 + 3), first group of 32 in it (bits 0–1).
        qs[35] = 0b10;
        // Value 127: first half, byte 31, fourth group (bits 6–7).
        qs[31] = 0b11 << 6;
        assert_eq!(ggml_value(&qs, 131), 2);
        assert_eq!(ggml_value(&qs, 127), 3);
        assert_eq!((0..256).filter(|&v| ggml_value(&qs, v) != 0).count(), 2);
    }
}

//! 5-bit values from a tile's nibbles and fifth bits, word by word: what the AVX-512 Q5_0, Q5_1
//! and Q5_K kernels share (the AVX2 ones read another layout, see `five_bit_layout`). In their
//! tiles, byte `row * 4 + t` of `qh` (one 64-byte word) holds in bit `q` the fifth bit of the
//! low nibble of byte `row * 4 + t` of `qs` word `q`, and in bit `4 + q` that of its high
//! nibble.
//!
//! Word `q`'s fifth bits go to bit 4 of each byte: bit `q` for the low nibbles (moved up by
//! 4 − q), bit `4 + q` for the high ones (down by q). The 16-bit shifts carry bits across
//! bytes only below bit 4 (up) or above it (down), which the mask drops.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// The fifth bits of a tile on 512-bit registers, yielding words 0 to 3 in turn.
#[cfg(target_arch = "x86_64")]
pub(crate) struct FifthBits512 {
    low: __m512i,
    high: __m512i,
}

#[cfg(target_arch = "x86_64")]
impl FifthBits512 {
    /// From the tile's 64 bytes of `qh`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    pub fn new(qh: __m512i) -> Self {
        Self {
            low: _mm512_slli_epi16(qh, 4),
            high: qh,
        }
    }

    /// The next word's 5-bit values (0..=31) for the low and the high nibbles of `raw`, its
    /// 64 bytes of `qs`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    pub fn next_word(&mut self, raw: __m512i) -> (__m512i, __m512i) {
        let (nibble, fifth) = (_mm512_set1_epi8(0x0f), _mm512_set1_epi8(0x10));
        let low = _mm512_or_si512(
            _mm512_and_si512(raw, nibble),
            _mm512_and_si512(self.low, fifth),
        );
        let high = _mm512_or_si512(
            _mm512_and_si512(_mm512_srli_epi16(raw, 4), nibble),
            _mm512_and_si512(self.high, fifth),
        );
        self.low = _mm512_srli_epi16(self.low, 1);
        self.high = _mm512_srli_epi16(self.high, 1);
        (low, high)
    }
}

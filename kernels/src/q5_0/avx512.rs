//! The Q5_0 kernel on AVX-512 VNNI: as the Q4_0 one (see `q4_0::avx512`), with each word's
//! fifth bits moved to bit 4 of its nibbles first. The 5-bit values are the unsigned operand
//! of `vpdpbusd` and the accumulator starts at `−16 · Σa`, their offset. Prompt rows go
//! through the tiles widened to Q8_0's (`widened`).

use super::{TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx512_frame::avx512_group;
#[cfg(target_arch = "x86_64")]
use crate::avx512_frame::{store_rows512, widen16};
#[cfg(target_arch = "x86_64")]
use crate::fifth_bits::FifthBits512;
use crate::prefetch::{WeightRequests, prefetch_light};
#[cfg(target_arch = "x86_64")]
use crate::widened::ByteTile;
#[cfg(target_arch = "x86_64")]
use std::mem::MaybeUninit;

/// Activation rows per micro-kernel call, as for Q4_0.
const MR: usize = 6;

const _: () = assert!(TILE_ROWS == 16);

avx512_group!(Tile, widened by widen);

/// `tile` as a Q8_0 tile of the AVX-512 kernel: each value `q` (0..=31, meaning `q − 16`)
/// becomes `q − 16 + 128`, in Q8_0's column order, and the scales are the same.
///
/// # Safety
/// The CPU has AVX-512 F/BW.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn widen(tile: &Tile, into: &mut MaybeUninit<ByteTile>) {
    use std::arch::x86_64::*;
    let (qs, to) = (
        tile.qs.as_ptr().cast::<__m512i>(),
        // SAFETY: `qs` is a field of the tile being written.
        unsafe { (&raw mut (*into.as_mut_ptr()).0.qs).cast::<__m512i>() },
    );
    // SAFETY: `qh` is 64 bytes at offset 256 of the tile, in the byte order of a `qs` word.
    let qh = unsafe { _mm512_loadu_si512(tile.qh.as_ptr().cast()) };
    let mut fifths = FifthBits512::new(qh);
    let offset = _mm512_set1_epi8((128 - 16) as i8);
    for q in 0..4 {
        // SAFETY: word `q` of `qs` is its 64 bytes from `q * 64`; Q8_0's words `q` and `q + 4`
        // are 64 bytes each from `q * 64` and `(q + 4) * 64` of its 512 (unaligned stores).
        // Word `q`'s low nibbles are columns `4q + t` and its high ones `4q + 16 + t`, which
        // a Q8_0 tile holds in words `q` and `q + 4`.
        unsafe {
            let (low, high) = fifths.next_word(_mm512_loadu_si512(qs.add(q)));
            _mm512_storeu_si512(to.add(q), _mm512_add_epi8(low, offset));
            _mm512_storeu_si512(to.add(q + 4), _mm512_add_epi8(high, offset));
        }
    }
    // SAFETY: `scales` is a field of the tile being written.
    unsafe { (&raw mut (*into.as_mut_ptr()).0.scales).write(tile.scales) };
}

/// # Safety
/// As for [`group`], for rows `first..first + R`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn micro_kernel<const R: usize>(
    tiles: &[Tile],
    acts: &QuantizedRows,
    out: *mut f32,
    stride: usize,
    first: usize,
) {
    use std::arch::x86_64::*;
    let blocks = acts.blocks;
    let (words, scales, offsets, _) = acts.rows(first..first + R);
    let mut acc = [_mm512_setzero_ps(); R];
    let requests = WeightRequests::here();
    for (block, tile) in tiles.iter().enumerate() {
        // See `prefetch::WeightRequests`.
        prefetch_light::<R, _>(requests, tile);
        let qs = tile.qs.as_ptr().cast::<__m512i>();
        // SAFETY: `qh` is 64 bytes at offset 256 of the tile, in the byte order of a `qs`
        // word.
        let qh = unsafe { _mm512_loadu_si512(tile.qh.as_ptr().cast()) };
        let mut fifths = FifthBits512::new(qh);
        let (mut low, mut high) = ([_mm512_setzero_si512(); 4], [_mm512_setzero_si512(); 4]);
        for q in 0..4 {
            // SAFETY: `qs` is 256 bytes at the start of the tile; word `q` is its 64 bytes
            // from `q * 64`.
            let raw = unsafe { _mm512_loadu_si512(qs.add(q)) };
            (low[q], high[q]) = fifths.next_word(raw);
        }
        let weight_scales = widen16(&tile.scales);
        for (r, acc) in acc.iter_mut().enumerate() {
            let at = r * blocks + block;
            let a = &words[at];
            // `offsets` holds −128 · Σa; the values' −16 needs −16 · Σa, exactly an eighth.
            let mut even = _mm512_set1_epi32(offsets[at] / 8);
            let mut odd = _mm512_setzero_si512();
            for q in 0..4 {
                even = _mm512_dpbusd_epi32(even, low[q], _mm512_set1_epi32(a[q]));
                odd = _mm512_dpbusd_epi32(odd, high[q], _mm512_set1_epi32(a[q + 4]));
            }
            let sum = _mm512_cvtepi32_ps(_mm512_add_epi32(even, odd));
            let scale = _mm512_mul_ps(weight_scales, _mm512_set1_ps(scales[at]));
            *acc = _mm512_fmadd_ps(sum, scale, *acc);
        }
    }
    // SAFETY: rows `first..first + R` are the caller's.
    unsafe { store_rows512(&acc, out, first, stride) }
}

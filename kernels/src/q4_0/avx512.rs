//! The Q4_0 kernel on AVX-512 VNNI. One 64-byte word of a tile holds the same four bytes of
//! all sixteen rows, so its low nibbles meet activation word `q` and its high nibbles word
//! `q + 4` in one `vpdpbusd` each: the nibbles are the unsigned operand as they are (0..=15),
//! the activations the signed one, and the i32 lanes cannot overflow. The accumulator starts
//! at `−8 · Σa`, which takes the nibbles' offset of 8 back out. Prompt rows go through the
//! tiles widened to Q8_0's (`widened`).

use super::{TILE_ROWS, Tile};
use crate::activations::QuantizedRows;
use crate::avx512_frame::avx512_group;
#[cfg(target_arch = "x86_64")]
use crate::avx512_frame::{nibbles512, store_rows512, widen16};
use crate::prefetch::{WeightRequests, prefetch_light};
#[cfg(target_arch = "x86_64")]
use crate::widened::ByteTile;
#[cfg(target_arch = "x86_64")]
use std::mem::MaybeUninit;

/// Activation rows per micro-kernel call: 8 unpacked weight registers, the scales, and two
/// accumulators and a sum per row fit the 32 zmm registers.
const MR: usize = 6;

const _: () = assert!(TILE_ROWS == 16);

avx512_group!(Tile, widened by widen);

/// `tile` as a Q8_0 tile of the AVX-512 kernel: each nibble `q` (meaning `q − 8`) becomes
/// `q − 8 + 128`, in Q8_0's column order, and the scales are the same.
///
/// # Safety
/// The CPU has AVX-512 F/BW.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn widen(tile: &Tile, into: &mut MaybeUninit<ByteTile>) {
    use std::arch::x86_64::*;
    // SAFETY: `qs` is 256 bytes at the start of the tile.
    let (low, high) = unsafe { nibbles512(tile.qs.as_ptr()) };
    let (to, offset) = (
        // SAFETY: `qs` is a field of the tile being written.
        unsafe { (&raw mut (*into.as_mut_ptr()).0.qs).cast::<__m512i>() },
        _mm512_set1_epi8((128 - 8) as i8),
    );
    for q in 0..4 {
        // SAFETY: Q8_0's words `q` and `q + 4` are 64 bytes each from `q * 64` and
        // `(q + 4) * 64` of its 512 (unaligned stores). Word `q`'s low nibbles are columns
        // `4q + t` and its high ones `4q + 16 + t`, which a Q8_0 tile holds in words `q` and
        // `q + 4`.
        unsafe {
            _mm512_storeu_si512(to.add(q), _mm512_add_epi8(low[q], offset));
            _mm512_storeu_si512(to.add(q + 4), _mm512_add_epi8(high[q], offset));
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
        // SAFETY: `qs` is 256 bytes at the start of the tile.
        let (low, high) = unsafe { nibbles512(tile.qs.as_ptr()) };
        let weight_scales = widen16(&tile.scales);
        for (r, acc) in acc.iter_mut().enumerate() {
            let at = r * blocks + block;
            let a = &words[at];
            // `offsets` holds −128 · Σa; the nibbles' −8 needs −8 · Σa, exactly a sixteenth.
            let mut even = _mm512_set1_epi32(offsets[at] / 16);
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

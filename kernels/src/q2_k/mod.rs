//! Q2_K weights × f32 activations, packed for AVX-512 VNNI or AVX2, the weights kept 2-bit.
//!
//! A GGUF Q2_K super-block holds 256 values of one row: 16 bytes of scales, each a 4-bit
//! scale `sc` (low nibble) and a 4-bit min `m` (high nibble) for 16 values, then 64 bytes
//! `qs` of 2-bit values `q` (where [`crate::two_bits`] says), an f16 `d` and an f16 `dmin`.
//! Value `v` means `d · sc[v / 16] · q − dmin · m[v / 16]`.
//!
//! A [`Tile`] takes 16 rows of one super-block. Each 32-value sub-block (one activation block)
//! keeps its values in a 2-bit plane and its two scale bytes per row as the file has them;
//! `d` and `dmin` stay the file's f16. That is 84 bytes per row and super-block, the file's
//! size.
//!
//! The AVX2 kernel multiplies `q` by the signed activation bytes with `vpmaddubsw` and sums
//! each 16-value half in i16 (a lane at most 8 · 3 · 127), then widens it with `vpmaddwd`
//! against the half's `sc`; the mins meet the activations' pair sums in a second `vpmaddwd`.
//! The AVX-512 kernel sums each half in i32 with `vpdpbusd`, a 64-byte plane word holding all
//! sixteen rows, then meets `sc` and, for both halves at once, `m` in `vpdpwssd`. Either way
//! both terms add up in i32 over the whole super-block, whose activations share one scale
//! (ggml's Q8_K): at most 16 · 6096 · 15 and 16 · 2032 · 15 in magnitude. `d` and `dmin`
//! scale them once per super-block.

mod avx2;
mod avx512;
#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;

use half::f16;

use crate::activations::{BLOCK, SUPER, Scheme};
use crate::isa::Isa;
use crate::packed::MatmulOut;
use crate::packed::packed_basics;
use crate::tiled::{self, PackError, TILE_ROWS};
use crate::two_bits::{self, PLANE_BYTES};
use crate::weight_arena::{ArenaSlice, WeightArena};

/// Sub-blocks (of one activation block each) per super-block.
const SUBS: usize = SUPER / BLOCK;
/// Bytes per GGUF Q2_K super-block: 16 bytes of scales, `qs`, `d` and `dmin`.
const BLOCK_BYTES: usize = SUPER / 16 + SUPER / 4 + 4;

/// Sixteen rows × one super-block (see the module documentation).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Tile {
    /// Per sub-block, the values as [`crate::two_bits`] lays them out.
    low: [[u8; PLANE_BYTES]; SUBS],
    /// `scales[j][half][row]`: the file's byte for values `16 · half..16 · half + 16` of
    /// sub-block `j`, `sc` in its low nibble and `m` in its high one.
    scales: [[[u8; TILE_ROWS]; 2]; SUBS],
    d: [f16; TILE_ROWS],
    dmin: [f16; TILE_ROWS],
}

// A tile reads as many bytes as the file holds for its 16 rows: decode is bound by them.
const _: () = assert!(size_of::<Tile>() == TILE_ROWS * BLOCK_BYTES);

/// A Q2_K matrix of `rows` × `cols` (one output per row), packed for
/// [`PackedQ2_K::matmul`].
#[expect(
    non_camel_case_types,
    reason = "ggml's name for the format, as in `PackedQ4_0`"
)]
pub struct PackedQ2_K {
    isa: Isa,
    rows: usize,
    cols: usize,
    /// `tiles[group * supers + s]`, where `supers = cols / 256`.
    tiles: ArenaSlice<Tile>,
}

packed_basics!(PackedQ2_K, "Q2_K");

impl PackedQ2_K {
    /// The layout alone, which the tests check on any CPU.
    fn pack_portable(
        arena: &WeightArena,
        isa: Isa,
        data: &[u8],
        rows: usize,
        cols: usize,
    ) -> Result<Self, PackError> {
        let supers = tiled::check_blocks(data.len(), rows, cols, SUPER, BLOCK_BYTES)?;
        let empty = Tile {
            low: [[0; PLANE_BYTES]; SUBS],
            scales: [[[0; TILE_ROWS]; 2]; SUBS],
            d: [f16::ZERO; TILE_ROWS],
            dmin: [f16::ZERO; TILE_ROWS],
        };
        let mut tiles = arena
            .filled(empty, rows / TILE_ROWS * supers)
            .ok_or(PackError::Overflow { rows, cols })?;
        for (row, bytes) in data.chunks_exact(supers * BLOCK_BYTES).enumerate() {
            let (group, lane) = (row / TILE_ROWS, row % TILE_ROWS);
            for (s, raw) in bytes.chunks_exact(BLOCK_BYTES).enumerate() {
                let tile = &mut tiles[group * supers + s];
                let (scales, rest) = raw.split_at(SUPER / 16);
                let (qs, d) = rest.split_at(SUPER / 4);
                tile.d[lane] = f16::from_le_bytes([d[0], d[1]]);
                tile.dmin[lane] = f16::from_le_bytes([d[2], d[3]]);
                for j in 0..SUBS {
                    tile.scales[j][0][lane] = scales[2 * j];
                    tile.scales[j][1][lane] = scales[2 * j + 1];
                    for v in 0..BLOCK {
                        let q = two_bits::ggml_value(qs, j * BLOCK + v);
                        two_bits::set(&mut tile.low[j], lane, v, q);
                    }
                }
            }
        }
        Ok(Self {
            isa,
            rows,
            cols,
            tiles,
        })
    }

    /// Row `row` of the weight, dequantized into `out` (`cols` long) exactly as ggml and
    /// candle do: an embedding lookup in a table tied to this matrix.
    ///
    /// # Panics
    /// If `row` is out of range or `out` is not `cols` long.
    pub fn dequantize_row(&self, row: usize, out: &mut [f32]) {
        assert!(row < self.rows, "row {row} of {}", self.rows);
        assert_eq!(out.len(), self.cols, "out is not cols long");
        let (group, lane) = (row / TILE_ROWS, row % TILE_ROWS);
        let supers = self.cols / SUPER;
        let tiles = &self.tiles[group * supers..(group + 1) * supers];
        for (tile, out) in tiles.iter().zip(out.chunks_exact_mut(SUPER)) {
            for (j, out) in out.chunks_exact_mut(BLOCK).enumerate() {
                for (v, out) in out.iter_mut().enumerate() {
                    let byte = tile.scales[j][v / 16][lane];
                    let scale = tile.d[lane].to_f32() * f32::from(byte & 0x0f);
                    let min = tile.dmin[lane].to_f32() * f32::from(byte >> 4);
                    // Unfused, as candle writes it.
                    *out = scale * f32::from(two_bits::get(&tile.low[j], lane, v)) - min;
                }
            }
        }
    }

    /// `out = lhs · Wᵀ` for `m` rows of `lhs` (`m × cols`, row-major) into `out` (`m × rows`),
    /// on `threads` threads of rayon's pool. The activations are quantized first as ggml's
    /// Q8_K: one scale per super-block, a block of values per sub-block.
    ///
    /// # Panics
    /// If `lhs` or `out` do not have the sizes above.
    pub fn matmul<'o>(&self, lhs: &[f32], m: usize, out: impl Into<MatmulOut<'o>>, threads: usize) {
        let kernels = tiled::Kernels {
            avx512: avx512::group,
            avx_vnni: avx2::group,
            avx2: avx2::group,
            avx512_pairs: None,
            activations: Scheme::Q8_K,
        };
        let shape = (self.rows, self.cols);
        // SAFETY: `pack_for` checked that the CPU runs `isa`; each group's tiles are its own
        // and as many as the kernels read.
        unsafe {
            let out = out.into();
            tiled::matmul(self.isa, &kernels, &self.tiles, shape, lhs, m, out, threads);
        }
    }
}

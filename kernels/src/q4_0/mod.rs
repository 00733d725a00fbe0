//! Q4_0 weights × f32 activations, packed for the int8 kernels (AVX-512 VNNI or AVX2).
//!
//! A GGUF Q4_0 block is an f16 scale `d` and 16 bytes: byte `j` holds value `j` in its low
//! nibble and value `j + 16` in its high nibble, each meaning `d · (nibble − 8)`. A [`Tile`]
//! takes 16 rows of one block with the bytes regrouped the way [`crate::PackedQ8_0`] groups
//! them: `qs[(q * 16 + row) * 4 + t]` is byte `4q + t` of `row`'s block, so its low nibble is
//! column `4q + t` and its high nibble column `4q + 16 + t` — activation words `q` and `q + 4`.
//! The weights stay 4-bit and the scales the f16 they are (288 bytes per 16 × 32 tile, the
//! file's size), which is what decode, bound by memory bandwidth, wants: with the scales
//! widened to f32 a tile took 320 bytes and decode read 11% more than the file.
//!
//! The AVX2 kernel multiplies the nibbles as unsigned bytes (0..=15) by the signed
//! activation bytes with `vpmaddubsw`. No sign trick is needed, and a block's sixteen products
//! per lane sum to at most 16 · 15 · 127 = 30480, inside i16, so a block accumulates in i16 and
//! widens once. The AVX-512 one does the same in `vpdpbusd`, in i32. The `− 8` comes back as
//! `− 8 · Σa` per activation block.

mod avx2;
mod avx512;
#[cfg(test)]
mod tests;

use half::f16;

use crate::activations::{BLOCK, Scheme};
use crate::isa::Isa;
use crate::packed::MatmulOut;
use crate::packed::packed_basics;
use crate::tiled::{self, PackError, TILE_ROWS};
use crate::weight_arena::{ArenaSlice, WeightArena};
/// Bytes per GGUF Q4_0 block: an f16 scale and 16 bytes of nibbles.
const BLOCK_BYTES: usize = 2 + BLOCK / 2;

/// Sixteen rows × one 32-column block (see the module documentation for the byte order).
/// Tiles are 32-byte aligned: a 64-byte alignment would pad each to 320 bytes.
#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct Tile {
    qs: [u8; TILE_ROWS * BLOCK / 2],
    scales: [f16; TILE_ROWS],
}

// A tile reads as many bytes as the file holds for its 16 rows: decode is bound by them.
const _: () = assert!(size_of::<Tile>() == TILE_ROWS * BLOCK_BYTES);

/// A Q4_0 matrix of `rows` × `cols` (one output per row), packed for
/// [`PackedQ4_0::matmul`].
pub struct PackedQ4_0 {
    isa: Isa,
    rows: usize,
    cols: usize,
    /// `tiles[group * blocks + block]`, where `blocks = cols / 32`.
    tiles: ArenaSlice<Tile>,
}

packed_basics!(PackedQ4_0, "Q4_0");

impl PackedQ4_0 {
    /// The layout alone, which the tests check on any CPU.
    fn pack_portable(
        arena: &WeightArena,
        isa: Isa,
        data: &[u8],
        rows: usize,
        cols: usize,
    ) -> Result<Self, PackError> {
        let blocks = tiled::check_layout(data.len(), rows, cols, BLOCK_BYTES)?;
        let empty = Tile {
            qs: [0; TILE_ROWS * BLOCK / 2],
            scales: [f16::ZERO; TILE_ROWS],
        };
        let mut tiles = arena
            .filled(empty, rows / TILE_ROWS * blocks)
            .ok_or(PackError::Overflow { rows, cols })?;
        for (row, bytes) in data.chunks_exact(blocks * BLOCK_BYTES).enumerate() {
            let (group, lane) = (row / TILE_ROWS, row % TILE_ROWS);
            for (block, raw) in bytes.chunks_exact(BLOCK_BYTES).enumerate() {
                let tile = &mut tiles[group * blocks + block];
                tile.scales[lane] = f16::from_le_bytes([raw[0], raw[1]]);
                for (j, &byte) in raw[2..].iter().enumerate() {
                    tile.qs[(j / 4 * TILE_ROWS + lane) * 4 + j % 4] = byte;
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

    /// Row `row` of the weight, dequantized into `out` (`cols` long): an embedding lookup in
    /// a table tied to this matrix.
    ///
    /// # Panics
    /// If `row` is out of range or `out` is not `cols` long.
    pub fn dequantize_row(&self, row: usize, out: &mut [f32]) {
        assert!(row < self.rows, "row {row} of {}", self.rows);
        assert_eq!(out.len(), self.cols, "out is not cols long");
        let (group, lane) = (row / TILE_ROWS, row % TILE_ROWS);
        let blocks = self.cols / BLOCK;
        let tiles = &self.tiles[group * blocks..(group + 1) * blocks];
        for (tile, out) in tiles.iter().zip(out.chunks_exact_mut(BLOCK)) {
            let scale = tile.scales[lane].to_f32();
            for j in 0..BLOCK / 2 {
                let byte = tile.qs[(j / 4 * TILE_ROWS + lane) * 4 + j % 4];
                out[j] = f32::from(i16::from(byte & 0x0f) - 8) * scale;
                out[j + BLOCK / 2] = f32::from(i16::from(byte >> 4) - 8) * scale;
            }
        }
    }

    /// `out = lhs · Wᵀ` for `m` rows of `lhs` (`m × cols`, row-major) into `out` (`m × rows`),
    /// on `threads` threads of rayon's pool. The activations are quantized to Q8_0 first, as
    /// ggml does.
    ///
    /// # Panics
    /// If `lhs` or `out` do not have the sizes above.
    pub fn matmul<'o>(&self, lhs: &[f32], m: usize, out: impl Into<MatmulOut<'o>>, threads: usize) {
        let kernels = tiled::Kernels {
            avx512: avx512::group,
            avx_vnni: avx2::avx_vnni::group,
            avx2: avx2::group,
            avx512_pairs: Some(avx512::group_pair),
            activations: Scheme::Q8_0,
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

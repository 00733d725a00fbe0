//! Q4_1 weights × f32 activations, packed for AVX-512 VNNI or AVX2, the weights kept 4-bit.
//!
//! A GGUF Q4_1 block is an f16 scale `d`, an f16 offset `m` and 16 bytes `qs` in Q4_0's
//! order (byte `j` holds value `j` in its low nibble and `j + 16` in its high one); value `q`
//! (0..=15) means `d · q + m`. A [`Tile`] takes 16 rows of one block in
//! [`crate::PackedQ4_0`]'s tile order and keeps `d` and `m` as the f16 they are: 320 bytes per
//! 16 × 32 tile, the file's size. The kernel widens them with F16C, a tile at a time.
//!
//! The AVX2 kernel sums `q · a` in i16 as the Q4_0 one does (at most 16 · 15 · 127 per lane),
//! the AVX-512 one in i32 with `vpdpbusd`; both add `d · a_scale` times that, plus
//! `m · a_scale · Σa`, to f32 accumulators.

mod avx2;
mod avx512;
#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;

use half::f16;

use crate::activations::{BLOCK, Scheme};
use crate::isa::Isa;
use crate::packed::MatmulOut;
use crate::packed::packed_basics;
use crate::tiled::{self, PackError, TILE_ROWS};
use crate::weight_arena::{ArenaSlice, WeightArena};

/// Bytes per GGUF Q4_1 block: an f16 scale and offset and 16 bytes of nibbles.
const BLOCK_BYTES: usize = 2 + 2 + BLOCK / 2;

/// Sixteen rows × one 32-column block (see the module documentation for the byte order).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Tile {
    /// `qs[(q * 16 + row) * 4 + t]` is byte `4q + t` of `row`'s block.
    qs: [u8; TILE_ROWS * BLOCK / 2],
    d: [f16; TILE_ROWS],
    m: [f16; TILE_ROWS],
}

// A tile reads as many bytes as the file holds for its 16 rows: decode is bound by them.
const _: () = assert!(size_of::<Tile>() == TILE_ROWS * BLOCK_BYTES);

/// A Q4_1 matrix of `rows` × `cols` (one output per row), packed for
/// [`PackedQ4_1::matmul`].
pub struct PackedQ4_1 {
    isa: Isa,
    rows: usize,
    cols: usize,
    /// `tiles[group * blocks + block]`, where `blocks = cols / 32`.
    tiles: ArenaSlice<Tile>,
}

packed_basics!(PackedQ4_1, "Q4_1");

impl PackedQ4_1 {
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
            d: [f16::ZERO; TILE_ROWS],
            m: [f16::ZERO; TILE_ROWS],
        };
        let mut tiles = arena
            .filled(empty, rows / TILE_ROWS * blocks)
            .ok_or(PackError::Overflow { rows, cols })?;
        for (row, bytes) in data.chunks_exact(blocks * BLOCK_BYTES).enumerate() {
            let (group, lane) = (row / TILE_ROWS, row % TILE_ROWS);
            for (block, raw) in bytes.chunks_exact(BLOCK_BYTES).enumerate() {
                let tile = &mut tiles[group * blocks + block];
                tile.d[lane] = f16::from_le_bytes([raw[0], raw[1]]);
                tile.m[lane] = f16::from_le_bytes([raw[2], raw[3]]);
                for (j, &byte) in raw[4..].iter().enumerate() {
                    tile.qs[qs_index(lane, j)] = byte;
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
        let blocks = self.cols / BLOCK;
        let tiles = &self.tiles[group * blocks..(group + 1) * blocks];
        for (tile, out) in tiles.iter().zip(out.chunks_exact_mut(BLOCK)) {
            let (d, m) = (tile.d[lane].to_f32(), tile.m[lane].to_f32());
            for j in 0..BLOCK / 2 {
                let byte = tile.qs[qs_index(lane, j)];
                // Unfused, as candle writes it.
                out[j] = f32::from(byte & 0x0f) * d + m;
                out[j + BLOCK / 2] = f32::from(byte >> 4) * d + m;
            }
        }
    }

    /// `out = lhs · Wᵀ` for `m` rows of `lhs` (`m × cols`, row-major) into `out` (`m × rows`),
    /// on `threads` threads of rayon's pool. The activations are quantized to Q8_0 first.
    ///
    /// # Panics
    /// If `lhs` or `out` do not have the sizes above.
    pub fn matmul<'o>(&self, lhs: &[f32], m: usize, out: impl Into<MatmulOut<'o>>, threads: usize) {
        let kernels = tiled::Kernels {
            avx512: avx512::group,
            avx_vnni: avx2::avx_vnni::group,
            avx2: avx2::group,
            avx512_pairs: None,
            activations: Scheme::Q8_0,
        };
        let shape = (self.rows, self.cols);
        // SAFETY: `pack_for` checked that the CPU runs `isa` (and F16C); each group's tiles
        // are its own and as many as the kernels read.
        unsafe {
            let out = out.into();
            tiled::matmul(self.isa, &kernels, &self.tiles, shape, lhs, m, out, threads);
        }
    }
}

/// Where byte `j` (0..16) of `lane`'s block lies in a tile's `qs`.
fn qs_index(lane: usize, j: usize) -> usize {
    (j / 4 * TILE_ROWS + lane) * 4 + j % 4
}

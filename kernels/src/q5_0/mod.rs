//! Q5_0 weights × f32 activations, packed for AVX-512 VNNI or AVX2, the weights kept 5-bit.
//!
//! A GGUF Q5_0 block is an f16 scale `d`, a little-endian u32 `qh` and 16 bytes `qs`: byte
//! `j` of `qs` holds the low four bits of value `j` in its low nibble and of value `j + 16` in
//! its high nibble, bit `j` of `qh` the fifth bit of value `j`; value `j` is `q` (0..=31) and
//! means `d · (q − 16)`.
//!
//! A [`Tile`] takes 16 rows of one block: 256 bytes of `qs` in [`crate::PackedQ4_0`]'s order
//! (`qs[(q * 16 + row) * 4 + t]` holds columns `4q + t` and `4q + 16 + t` of `row`), 64 bytes of
//! `qh` and the 16 f16 scales, 352 bytes as in the file; decode reads each of them once. How
//! the ten bits of a column pair are split between `qs` and `qh` is the kernel's: the file's
//! nibbles and fifth bits for AVX-512, each low column whole in a byte for AVX2 (see
//! `five_bit_layout`).
//!
//! The AVX2 kernel multiplies the unsigned 5-bit `q` by the signed activation bytes with
//! `vpmaddubsw` (a pair at most 2 · 31 · 127, no saturation) and sums a block's sixteen
//! products per lane in i16 with wrapping adds, then subtracts 16 times the activations' pair
//! sums: the unsigned sum (up to 16 · 31 · 127 = 62992) wraps, but the true sum of
//! `(q − 16) · a` is at most 16 · 16 · 127 = 32512 per lane, inside i16, so it comes out exact
//! (the trick of [`crate::PackedQ6_K`]). `vpmaddwd` against ones widens it.

mod avx2;
mod avx512;
#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;

use half::f16;

use crate::activations::{BLOCK, Scheme};
use crate::five_bit_layout::{FiveBitLayout, gguf_values};
use crate::isa::Isa;
use crate::packed::MatmulOut;
use crate::packed::packed_basics;
use crate::tiled::{self, PackError, TILE_ROWS};
use crate::weight_arena::{ArenaSlice, WeightArena};

/// Bytes per GGUF Q5_0 block: an f16 scale, 4 bytes of fifth bits and 16 bytes of nibbles.
const BLOCK_BYTES: usize = 2 + 4 + BLOCK / 2;

/// Sixteen rows × one 32-column block (see the module documentation for the byte order).
/// The scales are the file's f16 and tiles 32-byte aligned, so a tile is 352 bytes, the
/// file's size: decode reads every weight once per token, and with f32 scales and a 64-byte
/// alignment (384 bytes) it read 9% more.
#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct Tile {
    qs: [u8; TILE_ROWS * BLOCK / 2],
    qh: [u8; TILE_ROWS * BLOCK / 8],
    scales: [f16; TILE_ROWS],
}

// A tile reads as many bytes as the file holds for its 16 rows: decode is bound by them.
const _: () = assert!(size_of::<Tile>() == TILE_ROWS * BLOCK_BYTES);

/// A Q5_0 matrix of `rows` × `cols` (one output per row), packed for
/// [`PackedQ5_0::matmul`].
pub struct PackedQ5_0 {
    isa: Isa,
    rows: usize,
    cols: usize,
    /// `tiles[group * blocks + block]`, where `blocks = cols / 32`.
    tiles: ArenaSlice<Tile>,
}

packed_basics!(PackedQ5_0, "Q5_0");

impl PackedQ5_0 {
    /// The layout alone, which the tests check on any CPU.
    fn pack_portable(
        arena: &WeightArena,
        isa: Isa,
        data: &[u8],
        rows: usize,
        cols: usize,
    ) -> Result<Self, PackError> {
        let blocks = tiled::check_layout(data.len(), rows, cols, BLOCK_BYTES)?;
        let layout = FiveBitLayout::for_isa(isa);
        let empty = Tile {
            qs: [0; TILE_ROWS * BLOCK / 2],
            qh: [0; TILE_ROWS * BLOCK / 8],
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
                let qh = u32::from_le_bytes([raw[2], raw[3], raw[4], raw[5]]);
                let values = gguf_values(qh, &raw[6..]);
                layout.store(&mut tile.qs, &mut tile.qh, lane, &values);
            }
        }
        Ok(Self {
            isa,
            rows,
            cols,
            tiles,
        })
    }

    /// The unsigned 5-bit value `v` (0..32) of `lane`'s block in `tile`.
    fn value(&self, tile: &Tile, lane: usize, v: usize) -> u8 {
        FiveBitLayout::for_isa(self.isa).value(&tile.qs, &tile.qh, lane, v)
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
            let scale = tile.scales[lane].to_f32();
            for (v, out) in out.iter_mut().enumerate() {
                *out = f32::from(i16::from(self.value(tile, lane, v)) - 16) * scale;
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

//! Q5_1 weights × f32 activations, packed for AVX-512 VNNI or AVX2, the weights kept 5-bit.
//! Q5_K_M files hold their 896-wide tensors (whose rows no 256-value K-quant block divides,
//! as in Qwen2.5-0.5B) in this format.
//!
//! A GGUF Q5_1 block is an f16 scale `d`, an f16 offset `m`, a little-endian u32 `qh` and 16
//! bytes `qs`, its values packed as Q5_0's (see [`crate::PackedQ5_0`]); value `j` is `q`
//! (0..=31) and means `d · q + m`.
//!
//! A [`Tile`] takes 16 rows of one block in Q5_0's tile order and layouts (see
//! `five_bit_layout`), with each row's `d` and `m` as the f16 the file has: 384 bytes per
//! 16 × 32 tile, the file's size (with them widened to f32, 448 bytes, decode read 17% more
//! than the file).
//!
//! The kernels compute `Σ (d · q + m) · a = d · Σ q · a + m · Σ a`. On AVX-512 `vpdpbusd` sums
//! `q · a` exactly in i32. On AVX2 the i16 sums of sixteen 5-bit products per lane would
//! overflow, so the kernel sums `(q − 16) · a` as the Q5_0 one does, and the `16 · d · Σa` it
//! leaves out joins `m · Σa`.

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

/// Bytes per GGUF Q5_1 block: an f16 scale and offset, 4 bytes of fifth bits and 16 bytes of
/// nibbles.
const BLOCK_BYTES: usize = 2 + 2 + 4 + BLOCK / 2;

/// Sixteen rows × one 32-column block (see the module documentation for the byte order).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Tile {
    qs: [u8; TILE_ROWS * BLOCK / 2],
    qh: [u8; TILE_ROWS * BLOCK / 8],
    scales: [f16; TILE_ROWS],
    /// Each row's offset `m`.
    mins: [f16; TILE_ROWS],
}

// A tile reads as many bytes as the file holds for its 16 rows: decode is bound by them.
const _: () = assert!(size_of::<Tile>() == TILE_ROWS * BLOCK_BYTES);

/// A Q5_1 matrix of `rows` × `cols` (one output per row), packed for
/// [`PackedQ5_1::matmul`].
pub struct PackedQ5_1 {
    isa: Isa,
    rows: usize,
    cols: usize,
    /// `tiles[group * blocks + block]`, where `blocks = cols / 32`.
    tiles: ArenaSlice<Tile>,
}

packed_basics!(PackedQ5_1, "Q5_1");

impl PackedQ5_1 {
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
            mins: [f16::ZERO; TILE_ROWS],
        };
        let mut tiles = arena
            .filled(empty, rows / TILE_ROWS * blocks)
            .ok_or(PackError::Overflow { rows, cols })?;
        for (row, bytes) in data.chunks_exact(blocks * BLOCK_BYTES).enumerate() {
            let (group, lane) = (row / TILE_ROWS, row % TILE_ROWS);
            for (block, raw) in bytes.chunks_exact(BLOCK_BYTES).enumerate() {
                let tile = &mut tiles[group * blocks + block];
                tile.scales[lane] = f16::from_le_bytes([raw[0], raw[1]]);
                tile.mins[lane] = f16::from_le_bytes([raw[2], raw[3]]);
                let qh = u32::from_le_bytes([raw[4], raw[5], raw[6], raw[7]]);
                let values = gguf_values(qh, &raw[8..]);
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
            let (scale, min) = (tile.scales[lane].to_f32(), tile.mins[lane].to_f32());
            for (v, out) in out.iter_mut().enumerate() {
                *out = f32::from(self.value(tile, lane, v)) * scale + min;
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
            avx512_pairs: None,
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

//! Q4_K weights × f32 activations, packed for AVX-512 VNNI or AVX2, the weights kept 4-bit.
//!
//! A GGUF Q4_K super-block holds 256 values of one row: an f16 `d`, an f16 `dmin`, 12 bytes of
//! 6-bit scales `sc` and mins `m` for its eight sub-blocks of 32 (ggml's `get_scale_min_k4`
//! unpacks them), then 128 bytes of nibbles, 32 per 64 values: byte `i` of chunk `c` holds
//! value `64c + i` in its low nibble and `64c + 32 + i` in its high one. Value `q` of
//! sub-block `j` means `d · sc[j] · q − dmin · m[j]`.
//!
//! A [`Tile`] takes 16 rows of one super-block. Each sub-block's nibbles are regrouped as
//! [`crate::PackedQ4_0`] groups a block's, so that a byte's two nibbles belong to the same
//! sub-block (values `j` and `j + 16`) and one 32-value activation block meets one sub-block;
//! the scales and mins stay 6-bit integers (a byte each), `d` and `dmin` the file's f16. That
//! is 148 bytes per row and super-block against the file's 144 (1.03×), read once per matmul.
//!
//! The activations are quantized as ggml does for the K-quants (Q8_K: one scale per
//! super-block). The AVX-512 kernel sums a whole super-block in i32, exactly, and scales it
//! once (see `avx512`). The AVX2 kernel sums `q · a` over a sub-block in i16 exactly as the
//! Q4_0 one does (at most 16 · 15 · 127 per lane), widens it with `vpmaddwd` against the
//! sub-block's scales and adds it up over the super-block in i32, the mins times the
//! activations' block sums beside it, as the AVX-512 kernel does; then `d · a_scale` times the
//! first, less `dmin · a_scale` times the second, goes to f32 accumulators.

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
use crate::weight_arena::{ArenaSlice, WeightArena};

/// Sub-blocks (of one activation block each) per super-block.
const SUBS: usize = SUPER / BLOCK;
/// Bytes per GGUF Q4_K super-block: `d`, `dmin`, 12 bytes of scales, 128 of nibbles.
const BLOCK_BYTES: usize = 4 + 12 + SUPER / 2;

/// Sixteen rows × one super-block (see the module documentation).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Tile {
    /// Per sub-block, the Q4_0 tile order: `qs[j][(b / 4 * 16 + row) * 4 + b % 4]` is byte `b`
    /// of `row`'s sub-block, value `b` in its low nibble and `b + 16` in its high one.
    qs: [[u8; TILE_ROWS * BLOCK / 2]; SUBS],
    /// `scales[j][row]` and `mins[j][row]`: sub-block `j`'s 6-bit scale and min.
    scales: [[u8; TILE_ROWS]; SUBS],
    mins: [[u8; TILE_ROWS]; SUBS],
    d: [f16; TILE_ROWS],
    dmin: [f16; TILE_ROWS],
}

// A tile reads the file's bytes for its 16 rows but for one thing: its 6-bit sub-block scales
// and mins, 12 bytes per row in the file, are a byte each here (64 more per tile, 2.8%), so
// that the kernels take them without unpacking.
const _: () = assert!(size_of::<Tile>() == TILE_ROWS * BLOCK_BYTES + 64);

/// ggml's `get_scale_min_k4`: sub-block `j`'s 6-bit scale and min from the 12 packed bytes.
fn scale_min(j: usize, packed: &[u8]) -> (u8, u8) {
    if j < 4 {
        (packed[j] & 63, packed[j + 4] & 63)
    } else {
        (
            (packed[j + 4] & 0x0f) | ((packed[j - 4] >> 6) << 4),
            (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4),
        )
    }
}

/// Where byte `b` (0..16) of `lane`'s sub-block lies in a tile's `qs[j]`.
fn qs_index(lane: usize, b: usize) -> usize {
    (b / 4 * TILE_ROWS + lane) * 4 + b % 4
}

/// A Q4_K matrix of `rows` × `cols` (one output per row), packed for
/// [`PackedQ4_K::matmul`].
#[expect(
    non_camel_case_types,
    reason = "ggml's name for the format, as in `PackedQ4_0`"
)]
pub struct PackedQ4_K {
    isa: Isa,
    rows: usize,
    cols: usize,
    /// `tiles[group * supers + s]`, where `supers = cols / 256`.
    tiles: ArenaSlice<Tile>,
}

packed_basics!(PackedQ4_K, "Q4_K");

impl PackedQ4_K {
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
            qs: [[0; TILE_ROWS * BLOCK / 2]; SUBS],
            scales: [[0; TILE_ROWS]; SUBS],
            mins: [[0; TILE_ROWS]; SUBS],
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
                tile.d[lane] = f16::from_le_bytes([raw[0], raw[1]]);
                tile.dmin[lane] = f16::from_le_bytes([raw[2], raw[3]]);
                let (packed, nibbles) = (&raw[4..16], &raw[16..]);
                for j in 0..SUBS {
                    (tile.scales[j][lane], tile.mins[j][lane]) = scale_min(j, packed);
                    // Sub-block `j` is the low (even `j`) or high nibbles of chunk `j / 2`.
                    let chunk = &nibbles[j / 2 * 32..j / 2 * 32 + 32];
                    let value = |i: usize| (chunk[i] >> (4 * (j % 2))) & 0x0f;
                    for b in 0..BLOCK / 2 {
                        tile.qs[j][qs_index(lane, b)] = value(b) | (value(b + BLOCK / 2) << 4);
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
                let scale = tile.d[lane].to_f32() * f32::from(tile.scales[j][lane]);
                let min = tile.dmin[lane].to_f32() * f32::from(tile.mins[j][lane]);
                for b in 0..BLOCK / 2 {
                    let byte = tile.qs[j][qs_index(lane, b)];
                    out[b] = scale * f32::from(byte & 0x0f) - min;
                    out[b + BLOCK / 2] = scale * f32::from(byte >> 4) - min;
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
            avx_vnni: avx2::avx_vnni::group,
            avx2: avx2::group,
            avx512_pairs: Some(avx512::group_pair),
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

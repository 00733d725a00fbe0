//! Q5_K weights × f32 activations, packed for AVX-512 VNNI or AVX2, the weights kept 5-bit.
//!
//! A GGUF Q5_K super-block holds 256 values of one row: an f16 `d`, an f16 `dmin`, 12 bytes of
//! 6-bit scales `sc` and mins `m` for its eight sub-blocks of 32 (packed as in Q5_K), 32 bytes
//! `qh` of fifth bits, then 128 bytes of nibbles laid out as Q5_K's: sub-block `j` is the low
//! (even `j`) or high nibbles of chunk `j / 2`, and bit `j` of `qh[l]` is the fifth bit of its
//! value `l`. Value `q` (0..=31) of sub-block `j` means `d · sc[j] · q − dmin · m[j]`.
//!
//! A [`Tile`] takes 16 rows of one super-block: each sub-block's 32 values as a
//! [`crate::PackedQ5_0`] tile holds a block's (`qs[j]` in [`crate::PackedQ4_0`]'s order, a byte
//! for values `b` and `b + 16`, and `qh[j]` for the bits `qs[j]` has no room for, split as the
//! kernel reads them: see `five_bit_layout`); scales and mins stay 6-bit integers, `d` and
//! `dmin` the file's f16. That is 180 bytes per row and super-block against the file's 176
//! (1.02×).
//!
//! The AVX-512 kernel sums `q · a` over a sub-block in `vpdpbusd`, in i32, as the Q5_K one
//! does. The AVX2 kernel cannot sum sixteen 5-bit products per i16 lane (up to 62992), so it
//! sums `(q − 16) · a` instead, as the Q5_0 one does (at most 32512: the wrapped unsigned sums
//! come out exact once 16 times the activations' pair sums are taken off), and adds the
//! `16 · d · sc · a_scale · Σa` back with the mins, in f32.

mod avx2;
mod avx512;
#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;

use half::f16;

use crate::activations::{BLOCK, SUPER, Scheme};
use crate::five_bit_layout::FiveBitLayout;
use crate::isa::Isa;
use crate::packed::MatmulOut;
use crate::packed::packed_basics;
use crate::tiled::{self, PackError, TILE_ROWS};
use crate::weight_arena::{ArenaSlice, WeightArena};

/// Sub-blocks (of one activation block each) per super-block.
const SUBS: usize = SUPER / BLOCK;
/// Bytes per GGUF Q5_K super-block: `d`, `dmin`, 12 bytes of scales, 32 of fifth bits, 128
/// of nibbles.
const BLOCK_BYTES: usize = 4 + 12 + SUPER / 8 + SUPER / 2;

/// Sixteen rows × one super-block (see the module documentation).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Tile {
    /// Per sub-block, the Q4_0 tile order: `qs[j][(b / 4 * 16 + row) * 4 + b % 4]` holds
    /// values `b` and `b + 16` of `row`'s sub-block, in the kernel's `five_bit_layout`.
    qs: [[u8; TILE_ROWS * BLOCK / 2]; SUBS],
    /// Per sub-block, `qh[j][row * 4 + t]` holds the bits of values `4q + t` and `4q + 16 + t`
    /// that `qs[j]` has no room for.
    qh: [[u8; TILE_ROWS * BLOCK / 8]; SUBS],
    /// `scales[j][row]` and `mins[j][row]`: sub-block `j`'s 6-bit scale and min.
    scales: [[u8; TILE_ROWS]; SUBS],
    mins: [[u8; TILE_ROWS]; SUBS],
    d: [f16; TILE_ROWS],
    dmin: [f16; TILE_ROWS],
}

// A tile reads the file's bytes for its 16 rows but for one thing: its 6-bit sub-block scales
// and mins, 12 bytes per row in the file, are a byte each here (64 more per tile, 2.3%), so
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

/// A Q5_K matrix of `rows` × `cols` (one output per row), packed for
/// [`PackedQ5_K::matmul`].
#[expect(
    non_camel_case_types,
    reason = "ggml's name for the format, as in `PackedQ4_0`"
)]
pub struct PackedQ5_K {
    isa: Isa,
    rows: usize,
    cols: usize,
    /// `tiles[group * supers + s]`, where `supers = cols / 256`.
    tiles: ArenaSlice<Tile>,
}

packed_basics!(PackedQ5_K, "Q5_K");

impl PackedQ5_K {
    /// The layout alone, which the tests check on any CPU.
    fn pack_portable(
        arena: &WeightArena,
        isa: Isa,
        data: &[u8],
        rows: usize,
        cols: usize,
    ) -> Result<Self, PackError> {
        let supers = tiled::check_blocks(data.len(), rows, cols, SUPER, BLOCK_BYTES)?;
        let layout = FiveBitLayout::for_isa(isa);
        let empty = Tile {
            qs: [[0; TILE_ROWS * BLOCK / 2]; SUBS],
            qh: [[0; TILE_ROWS * BLOCK / 8]; SUBS],
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
                let (packed, fifths, nibbles) = (&raw[4..16], &raw[16..48], &raw[48..]);
                for j in 0..SUBS {
                    (tile.scales[j][lane], tile.mins[j][lane]) = scale_min(j, packed);
                    // Sub-block `j` is the low (even `j`) or high nibbles of chunk `j / 2`,
                    // and bit `j` of each byte of `qh` its fifth bits.
                    let chunk = &nibbles[j / 2 * 32..j / 2 * 32 + 32];
                    let values: [u8; BLOCK] = std::array::from_fn(|v| {
                        let nibble = (chunk[v] >> (4 * (j % 2))) & 0x0f;
                        nibble | ((fifths[v] >> j) & 1) << 4
                    });
                    layout.store(&mut tile.qs[j], &mut tile.qh[j], lane, &values);
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
                for (v, out) in out.iter_mut().enumerate() {
                    *out = scale * f32::from(self.value(tile, j, lane, v)) - min;
                }
            }
        }
    }

    /// The unsigned 5-bit value `v` (0..32) of `lane`'s sub-block `j` in `tile`.
    fn value(&self, tile: &Tile, j: usize, lane: usize, v: usize) -> u8 {
        FiveBitLayout::for_isa(self.isa).value(&tile.qs[j], &tile.qh[j], lane, v)
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

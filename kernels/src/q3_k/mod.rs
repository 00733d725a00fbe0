//! Q3_K weights × f32 activations, packed for AVX-512 VNNI or AVX2, the weights kept 3-bit.
//!
//! A GGUF Q3_K super-block holds 256 values of one row: 32 bytes `hmask` of high bits, 64
//! bytes `qs` of 2-bit low parts, 12 bytes packing sixteen 6-bit scales (one per 16 values,
//! stored with an offset of 32) and an f16 `d`. Value `v` is `q = low | high << 2` (0..8),
//! its low part where [`crate::two_bits`] says, its high bit in `hmask[v % 32]` at bit
//! `v / 32`, and it means `d · (scale[v / 16] − 32) · (q − 4)`.
//!
//! A [`Tile`] takes 16 rows of one super-block. Each 32-value sub-block (one activation block)
//! keeps its values in 192 bytes as its kernel reads them ([`Layout`]): for AVX-512 the low
//! parts in a 2-bit plane and the high bits in a byte per pair of plane bytes that share a
//! position in both plane words (see [`high_place`]), for AVX2 three registers per half of
//! the rows. The scales become i8 (`scale − 32`) and `d` stays the file's f16. That is 114
//! bytes per row and super-block against the file's 110 (1.04×).
//!
//! The AVX2 kernel multiplies the unsigned `q` by the signed activation bytes with
//! `vpmaddubsw` (a pair at most 2 · 7 · 127), sums each 16-value half in i16 and subtracts 4
//! times the activations' pair sums there (a lane's true sum is at most 8 · 4 · 127), then
//! widens it with `vpmaddwd` against the half's scale. The AVX-512 kernel sums each half in
//! i32 with `vpdpbusd`, starting from −4 · Σa, and scales the halves by `d · scale` in f32.

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
/// Bytes per GGUF Q3_K super-block: `hmask`, `qs`, 12 bytes of scales and `d`.
const BLOCK_BYTES: usize = SUPER / 8 + SUPER / 4 + 12 + 2;

/// Sixteen rows × one super-block (see the module documentation).
#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct Tile {
    /// Per sub-block, 128 bytes of its values as the kernel's [`Layout`] puts them: the 2-bit
    /// plane, or registers `A` and `B`.
    low: [[u8; PLANE_BYTES]; SUBS],
    /// Per sub-block, the other 64 bytes: the high bits (see [`high_place`]), or register `C`.
    high: [[u8; TILE_ROWS * BLOCK / 8]; SUBS],
    /// `scales[j][half][row]`: the scale of values `16 · half..16 · half + 16` of sub-block `j`,
    /// less 32.
    scales: [[[i8; TILE_ROWS]; 2]; SUBS],
    d: [f16; TILE_ROWS],
}

// A tile reads the file's bytes for its 16 rows but for one thing: its 6-bit sub-block scales,
// 12 bytes per row in the file, are a byte each here (64 more per tile, 3.6%), so that the
// kernels take them without unpacking.
const _: () = assert!(size_of::<Tile>() == TILE_ROWS * BLOCK_BYTES + 64);

/// Where the high bit of value `v` (0..32) of `lane`'s sub-block lies in a tile's `high[j]`:
/// the byte, and the bit. Byte `(lane % 8) · 4 + t` of the 32 bytes for rows 0–7 (then 8–15)
/// sits where the plane's bytes for that row and `t` sit in either plane word `w`, and holds
/// in bit `4w + k` the high bit of the value at bits `2k` there.
fn high_place(lane: usize, v: usize) -> (usize, u32) {
    let (b, k) = (v % 8, v / 8);
    (
        32 * (lane / 8) + (lane % 8) * 4 + b % 4,
        (4 * (b / 4) + k) as u32,
    )
}

/// How a tile's `low` and `high` hold a sub-block's 3-bit values, chosen by the kernel that
/// reads them.
#[derive(Clone, Copy)]
enum Layout {
    /// For AVX-512: the low parts in a 2-bit plane ([`crate::two_bits`]), the high bits where
    /// [`high_place`] says: a 64-byte plane word gives four activation words' values for all
    /// sixteen rows, each a shift and a mask.
    Planes,
    /// For AVX2: per half of the rows (8 rows × 4 bytes, a 32-byte register each), three
    /// registers `A`, `B` (in `low`) and `C` (in `high`) hold the values of the sub-block's eight
    /// activation words byte for byte: words 0 and 1 in bits 0–2 and 3–5 of `A`, 2 and 3 of `B`,
    /// 4 and 5 of `C`; word 6 has its low two bits in bits 6–7 of `A` and its top bit in bit 6
    /// of `C`, word 7 likewise in `B` and bit 7 of `C`. A half unpacks in 19 instructions where
    /// the planes took 37 (see `avx2`).
    Packed,
}

impl Layout {
    fn for_isa(isa: Isa) -> Self {
        match isa {
            Isa::Avx512Vnni => Self::Planes,
            Isa::AvxVnni | Isa::Avx2 => Self::Packed,
        }
    }

    /// Stores the unsigned 3-bit value `v` (0..32) of `lane`'s sub-block `j`.
    fn store(self, tile: &mut Tile, j: usize, lane: usize, v: usize, q: u8) {
        match self {
            Self::Planes => {
                two_bits::set(&mut tile.low[j], lane, v, q & 3);
                let (at, bit) = high_place(lane, v);
                tile.high[j][at] |= (q >> 2) << bit;
            }
            Self::Packed => {
                let (a, b, c) = packed_bytes(lane, v);
                let (low, high) = (&mut tile.low[j], &mut tile.high[j]);
                match v / 4 {
                    k @ 0..2 => low[a] |= q << (3 * k),
                    k @ 2..4 => low[b] |= q << (3 * (k - 2)),
                    k @ 4..6 => high[c] |= q << (3 * (k - 4)),
                    6 => {
                        low[a] |= (q & 3) << 6;
                        high[c] |= (q >> 2) << 6;
                    }
                    _ => {
                        low[b] |= (q & 3) << 6;
                        high[c] |= (q >> 2) << 7;
                    }
                }
            }
        }
    }

    /// The unsigned 3-bit value `v` (0..32) of `lane`'s sub-block `j`.
    fn value(self, tile: &Tile, j: usize, lane: usize, v: usize) -> u8 {
        match self {
            Self::Planes => {
                let (at, bit) = high_place(lane, v);
                two_bits::get(&tile.low[j], lane, v) | (((tile.high[j][at] >> bit) & 1) << 2)
            }
            Self::Packed => {
                let (a, b, c) = packed_bytes(lane, v);
                let (a, b, c) = (tile.low[j][a], tile.low[j][b], tile.high[j][c]);
                match v / 4 {
                    k @ 0..2 => (a >> (3 * k)) & 7,
                    k @ 2..4 => (b >> (3 * (k - 2))) & 7,
                    k @ 4..6 => (c >> (3 * (k - 4))) & 7,
                    6 => (a >> 6) | ((c >> 6) & 1) << 2,
                    _ => (b >> 6) | (c >> 7) << 2,
                }
            }
        }
    }
}

/// Where value `v` (0..32) of `lane`'s sub-block lies in [`Layout::Packed`]: its bytes in the
/// `A` and `B` registers of `low` and in the `C` register of `high`, the one for its row and
/// its column `v % 4` in an activation word.
fn packed_bytes(lane: usize, v: usize) -> (usize, usize, usize) {
    // Rows 0–7 in the first 32 bytes of a register pair, 8–15 in the second.
    let at = 32 * (lane / 8) + 4 * (lane % 8) + v % 4;
    (at, 64 + at, at)
}

/// The sixteen scales of a super-block from their 12 packed bytes, as ggml's
/// `dequantize_row_q3_K` unpacks them (still offset by 32): scale `i` has its low four bits
/// in byte `i % 8` (the low nibble for `i` < 8) and its high two in byte `8 + i % 4`, at bits
/// `2 · (i / 4)`.
fn unpack_scales(packed: &[u8]) -> [u8; 16] {
    std::array::from_fn(|i| {
        let low = (packed[i % 8] >> (4 * (i / 8))) & 0x0f;
        let high = (packed[8 + i % 4] >> (2 * (i / 4))) & 3;
        low | (high << 4)
    })
}

/// A Q3_K matrix of `rows` × `cols` (one output per row), packed for
/// [`PackedQ3_K::matmul`].
#[expect(
    non_camel_case_types,
    reason = "ggml's name for the format, as in `PackedQ4_0`"
)]
pub struct PackedQ3_K {
    isa: Isa,
    rows: usize,
    cols: usize,
    /// `tiles[group * supers + s]`, where `supers = cols / 256`.
    tiles: ArenaSlice<Tile>,
}

packed_basics!(PackedQ3_K, "Q3_K");

impl PackedQ3_K {
    /// The layout alone, which the tests check on any CPU.
    fn pack_portable(
        arena: &WeightArena,
        isa: Isa,
        data: &[u8],
        rows: usize,
        cols: usize,
    ) -> Result<Self, PackError> {
        let supers = tiled::check_blocks(data.len(), rows, cols, SUPER, BLOCK_BYTES)?;
        let layout = Layout::for_isa(isa);
        let empty = Tile {
            low: [[0; PLANE_BYTES]; SUBS],
            high: [[0; TILE_ROWS * BLOCK / 8]; SUBS],
            scales: [[[0; TILE_ROWS]; 2]; SUBS],
            d: [f16::ZERO; TILE_ROWS],
        };
        let mut tiles = arena
            .filled(empty, rows / TILE_ROWS * supers)
            .ok_or(PackError::Overflow { rows, cols })?;
        for (row, bytes) in data.chunks_exact(supers * BLOCK_BYTES).enumerate() {
            let (group, lane) = (row / TILE_ROWS, row % TILE_ROWS);
            for (s, raw) in bytes.chunks_exact(BLOCK_BYTES).enumerate() {
                let tile = &mut tiles[group * supers + s];
                let (q, scales, d) = decode(raw);
                tile.d[lane] = d;
                for (j, q) in q.chunks_exact(BLOCK).enumerate() {
                    tile.scales[j][0][lane] = scales[2 * j] as i8 - 32;
                    tile.scales[j][1][lane] = scales[2 * j + 1] as i8 - 32;
                    for (v, &q) in q.iter().enumerate() {
                        layout.store(tile, j, lane, v, q);
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

    /// The unsigned 3-bit value `v` (0..32) of `lane`'s sub-block `j` in `tile`.
    fn value(&self, tile: &Tile, j: usize, lane: usize, v: usize) -> u8 {
        Layout::for_isa(self.isa).value(tile, j, lane, v)
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
                    let scale = tile.d[lane].to_f32() * f32::from(tile.scales[j][v / 16][lane]);
                    let q = i16::from(self.value(tile, j, lane, v)) - 4;
                    *out = scale * f32::from(q);
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

/// One GGUF Q3_K super-block's 256 unsigned 3-bit values, 16 scales (offset by 32) and `d`.
fn decode(raw: &[u8]) -> ([u8; SUPER], [u8; SUPER / 16], f16) {
    let (hmask, rest) = raw.split_at(SUPER / 8);
    let (qs, rest) = rest.split_at(SUPER / 4);
    let (scales, d) = rest.split_at(12);
    let q = std::array::from_fn(|v| {
        two_bits::ggml_value(qs, v) | (((hmask[v % 32] >> (v / 32)) & 1) << 2)
    });
    (q, unpack_scales(scales), f16::from_le_bytes([d[0], d[1]]))
}

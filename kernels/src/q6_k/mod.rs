//! Q6_K weights × f32 activations, packed for AVX-512 VNNI or AVX2, the weights kept 6-bit.
//!
//! A GGUF Q6_K super-block holds 256 values of one row: 128 bytes `ql` of low nibbles, 64
//! bytes `qh` of 2-bit high parts, 16 signed 8-bit scales (one per 16 values) and an f16 `d`;
//! value `v` is `q = low | high << 4` and means `d · scale[v / 16] · (q − 32)`. Within each
//! half of 128 values, `ql[l]` holds values `l` (low nibble) and `l + 64` (high nibble),
//! `ql[l + 32]` values `l + 32` and `l + 96`, and `qh[l]` the high parts of `l`, `l + 32`,
//! `l + 64` and `l + 96` in its bit pairs from the lowest (see `decode`).
//!
//! A [`Tile`] takes 16 rows of one super-block. Each 32-value sub-block (one activation
//! block) keeps a byte per values `b` and `b + 16` in [`crate::PackedQ4_0`]'s order and the
//! four bits more that they need in a byte per pair of those bytes, where the kernel shifts
//! them into place for rows 0–7 and 8–15 (see [`Tile::qh`]; which eight bits go in the first
//! byte is the kernel's [`Layout`]); the scales stay i8 and `d` the file's f16. That is 210
//! bytes per row and super-block, the file's size.
//!
//! The AVX2 kernel multiplies the unsigned 6-bit `q` by the signed activation bytes with
//! `vpmaddubsw` (a pair at most 2 · 63 · 127, no saturation) and sums each 16-value half in
//! i16 with wrapping adds, then subtracts 32 times the activations' pair sums: the true sum
//! of `(q − 32) · a` over a half is at most 8 · 32 · 127 = 32512 per lane, inside i16, so the
//! wrapped intermediate sums come out exact. `vpmaddwd` against each half's scale widens it.

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
/// Bytes per GGUF Q6_K super-block: `ql`, `qh`, 16 scales and `d`.
const BLOCK_BYTES: usize = SUPER / 2 + SUPER / 4 + SUPER / 16 + 2;

/// Sixteen rows × one super-block (see the module documentation).
#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct Tile {
    /// Per sub-block, the Q4_0 tile order: `ql[j][(b / 4 * 16 + row) * 4 + b % 4]` holds values
    /// `b` and `b + 16` of `row`'s sub-block, or the part of them the kernel's [`Layout`] puts
    /// there.
    ql: [[u8; TILE_ROWS * BLOCK / 2]; SUBS],
    /// Per sub-block and word `q` (a 32-byte group), byte `k` holds the rest of the values
    /// whose `ql` byte is byte `k` of the word's rows 0–7 (bits 0–3) and of its rows 8–15
    /// (bits 4–7), as the [`Layout`] splits them.
    qh: [[u8; TILE_ROWS * BLOCK / 4]; SUBS],
    /// `scales[j][half][row]`: the scale of values `16 · half..16 · half + 16` of sub-block `j`.
    scales: [[[i8; TILE_ROWS]; 2]; SUBS],
    d: [f16; TILE_ROWS],
}

// A tile reads as many bytes as the file holds for its 16 rows: decode is bound by them.
const _: () = assert!(size_of::<Tile>() == TILE_ROWS * BLOCK_BYTES);

/// Where byte `b` (0..16) of `lane`'s sub-block lies in a tile's `ql[j]`.
fn ql_index(lane: usize, b: usize) -> usize {
    (b / 4 * TILE_ROWS + lane) * 4 + b % 4
}

/// Where the rest of `lane`'s byte `b` lies in a tile's `qh[j]`: the byte, and the shift of
/// its four bits.
fn qh_place(lane: usize, b: usize) -> (usize, u32) {
    let k = (lane % 8) * 4 + b % 4;
    (b / 4 * 32 + k, if lane < 8 { 0 } else { 4 })
}

/// How a tile splits the twelve bits of a `ql` byte's two values (`b` and `b + 16` of a
/// sub-block) between `ql` and `qh`: each kernel reads its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// For AVX-512: `ql` holds both values' low nibbles, as the file does; the four bits in
    /// `qh` are the low value's top pair, then the high one's.
    Nibbles,
    /// For AVX2: `ql` holds the low value whole (bits 0–5) and the high value's two lowest
    /// bits (6–7); the four bits in `qh` are the high value's top four. The low value is then
    /// one AND, and a word unpacks in six instructions a register where the nibbles took
    /// eight or nine (see `avx2`).
    WholeLow,
}

impl Layout {
    fn for_isa(isa: Isa) -> Self {
        match isa {
            Isa::Avx512Vnni => Self::Nibbles,
            Isa::AvxVnni | Isa::Avx2 => Self::WholeLow,
        }
    }

    /// Stores values `low` (`b`) and `high` (`b + 16`) of `lane`'s sub-block `j`.
    fn store(self, tile: &mut Tile, j: usize, lane: usize, b: usize, (low, high): (u8, u8)) {
        let (at, shift) = qh_place(lane, b);
        let (ql, rest) = match self {
            Self::Nibbles => ((low & 0x0f) | (high << 4), (low >> 4) | ((high >> 4) << 2)),
            Self::WholeLow => (low | (high << 6), high >> 2),
        };
        tile.ql[j][ql_index(lane, b)] = ql;
        tile.qh[j][at] |= rest << shift;
    }

    /// The unsigned 6-bit value `v` (0..32) of `lane`'s sub-block `j`.
    fn value(self, tile: &Tile, j: usize, lane: usize, v: usize) -> u8 {
        let b = v % (BLOCK / 2);
        let (at, shift) = qh_place(lane, b);
        let (ql, rest) = (
            tile.ql[j][ql_index(lane, b)],
            (tile.qh[j][at] >> shift) & 0x0f,
        );
        let high = v >= BLOCK / 2;
        match self {
            Self::Nibbles if high => (ql >> 4) | (rest >> 2) << 4,
            Self::Nibbles => (ql & 0x0f) | (rest & 3) << 4,
            Self::WholeLow if high => (ql >> 6) | rest << 2,
            Self::WholeLow => ql & 0x3f,
        }
    }
}

/// A Q6_K matrix of `rows` × `cols` (one output per row), packed for
/// [`PackedQ6_K::matmul`].
#[expect(
    non_camel_case_types,
    reason = "ggml's name for the format, as in `PackedQ4_0`"
)]
pub struct PackedQ6_K {
    isa: Isa,
    rows: usize,
    cols: usize,
    /// `tiles[group * supers + s]`, where `supers = cols / 256`.
    tiles: ArenaSlice<Tile>,
}

packed_basics!(PackedQ6_K, "Q6_K");

impl PackedQ6_K {
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
            ql: [[0; TILE_ROWS * BLOCK / 2]; SUBS],
            qh: [[0; TILE_ROWS * BLOCK / 4]; SUBS],
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
                    tile.scales[j][0][lane] = scales[2 * j];
                    tile.scales[j][1][lane] = scales[2 * j + 1];
                    for b in 0..BLOCK / 2 {
                        layout.store(tile, j, lane, b, (q[b], q[b + BLOCK / 2]));
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

    /// The unsigned 6-bit value `v` (0..32) of `lane`'s sub-block `j` in `tile`.
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
                for (b, out) in out.iter_mut().enumerate() {
                    let scale = tile.d[lane].to_f32() * f32::from(tile.scales[j][b / 16][lane]);
                    let q = i16::from(self.value(tile, j, lane, b)) - 32;
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

/// One GGUF Q6_K super-block's 256 unsigned 6-bit values, 16 scales and `d`, in ggml's
/// `dequantize_row_q6_K` order.
fn decode(raw: &[u8]) -> ([u8; SUPER], [i8; SUPER / 16], f16) {
    let (ql, rest) = raw.split_at(SUPER / 2);
    let (qh, rest) = rest.split_at(SUPER / 4);
    let (scales, d) = rest.split_at(SUPER / 16);
    let mut q = [0u8; SUPER];
    for half in 0..2 {
        let (ql, qh) = (&ql[64 * half..], &qh[32 * half..]);
        let q = &mut q[128 * half..];
        for l in 0..32 {
            q[l] = (ql[l] & 0x0f) | ((qh[l] & 3) << 4);
            q[l + 32] = (ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4);
            q[l + 64] = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
            q[l + 96] = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
        }
    }
    let scales = std::array::from_fn(|i| scales[i] as i8);
    (q, scales, f16::from_le_bytes([d[0], d[1]]))
}

//! Q8_0 weights × f32 activations, with the weights repacked for `vpdpbusd`.
//!
//! GGUF stores a Q8_0 matrix as rows of 34-byte blocks (an f16 scale, then 32 signed bytes).
//! A dot-product instruction wants the opposite grouping: one register holding the same four
//! columns of sixteen different rows, so that one broadcast activation word multiplies all
//! sixteen rows at once and the sixteen sums land in the sixteen lanes of the result with no
//! horizontal reduction. [`PackedQ8_0`] holds that layout: for every group of 16 rows and every
//! 32-column block, a [`Tile`] with the 512 weight bytes in dot-product order and the 16 scales
//! as the f16 the file has: 544 bytes per 16 × 32 tile, the file's size. Decode reads every
//! weight once per token from memory, so a byte more per tile is time: with the scales widened
//! to f32 (576 bytes) the kernels read 6% more than the file.
//!
//! `vpdpbusd` multiplies unsigned by signed bytes, so for it the weights are stored offset by
//! 128 (`w ^ 0x80`) and every activation block carries `-128 · Σa`, which starts its
//! accumulator: `Σ a·(w + 128) − 128·Σa = Σ a·w`, exactly, in i32. The AVX-VNNI kernel does
//! the same on 256-bit registers; the AVX2 kernel takes the weights as they are (see
//! [`weight_bias`]).

mod avx2;
mod avx512;
mod avx_vnni;
#[cfg(target_arch = "x86_64")]
pub(crate) use avx_vnni::group_blocks as vnni_group_blocks;
#[cfg(target_arch = "x86_64")]
pub(crate) use avx512::{group_blocks, group_blocks_pair};
#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;

use std::borrow::Borrow;

use half::f16;

use crate::activations::{BLOCK, Scheme};
use crate::isa::Isa;
use crate::packed::MatmulOut;
use crate::packed::packed_basics;
use crate::tiled::PackError;
use crate::tiled::{self, TILE_ROWS};
use crate::weight_arena::{ArenaSlice, WeightArena};

/// Bytes per GGUF Q8_0 block: an f16 scale and 32 signed bytes.
const BLOCK_BYTES: usize = 2 + BLOCK;

/// What the packed weight bytes are xored with: `vpdpbusd` wants them unsigned (offset by
/// 128), on either width; AVX2's kernel wants them signed, as GGUF has them.
fn weight_bias(isa: Isa) -> u8 {
    match isa {
        Isa::Avx512Vnni | Isa::AvxVnni => 0x80,
        Isa::Avx2 => 0,
    }
}

/// Sixteen rows × one 32-column block: `qs[(q * 16 + row) * 4 + t]` is column `q * 4 + t` of
/// `row`, xored with the kernel's [`weight_bias`]; `scales[row]` is that row's block scale.
/// Tiles are 32-byte aligned, not 64: a 64-byte alignment would pad each to 576 bytes.
/// The AVX-512 kernels of the formats narrower than a byte widen their tiles to this one for
/// prompt rows (`widened`).
#[derive(Clone, Copy)]
#[repr(C, align(32))]
pub(crate) struct Tile {
    pub(crate) qs: [u8; TILE_ROWS * BLOCK],
    pub(crate) scales: [f16; TILE_ROWS],
}

impl Tile {
    pub(crate) const EMPTY: Self = Self {
        qs: [0; TILE_ROWS * BLOCK],
        scales: [f16::ZERO; TILE_ROWS],
    };
}

/// A [`Tile`] that starts on a cache line, 576 bytes with its padding (a type's size is a
/// multiple of its alignment, so every tile of an array of them does): what the formats
/// narrower than a byte widen their tiles to for prompt rows (`widened::ByteTile` says why).
/// The padding costs L1 only in a run of widened tiles, where in a packed matrix every
/// decoded token would read it.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub(crate) struct LineTile(pub(crate) Tile);

impl Borrow<Tile> for LineTile {
    fn borrow(&self) -> &Tile {
        &self.0
    }
}

// A tile reads as many bytes as the file holds for its 16 rows: decode is bound by them.
const _: () = assert!(size_of::<Tile>() == TILE_ROWS * BLOCK_BYTES);

/// Writes a Q8_0 kernel's `group` (all of a row group's blocks) and `group_blocks` (a run of
/// them, on packed tiles or on the [`LineTile`]s that the formats narrower than a byte widen
/// their tiles to: `widened`), both over the module's micro-kernel
/// `micro_kernel::<R>(run, acts, out, stride, first)`, `MR` rows a call and the rest in one
/// (`in_row_steps`). `$cpu` names what the CPU has.
macro_rules! blocks_frame {
    ($cpu:literal) => {
        /// Writes the 16 columns of one row group for activation rows `rows`: `out` points at
        /// the group's first column of row 0, rows are `stride` apart.
        ///
        /// # Safety
        #[doc = concat!("The CPU has ", $cpu, "; `out` is valid for writes of `rows.end` rows ×")]
        /// `stride` f32 from the start of the output; `tiles` holds `acts.blocks` tiles.
        #[cfg(target_arch = "x86_64")]
        pub(super) unsafe fn group(
            tiles: &[Tile],
            acts: &QuantizedRows,
            rows: Range<usize>,
            out: *mut f32,
            stride: usize,
        ) {
            debug_assert_eq!(tiles.len(), acts.blocks);
            // SAFETY: forwarded from the caller, for all of the activations' blocks.
            unsafe { group_blocks(tiles, acts, 0, rows, out, stride, Sums::Fresh) }
        }

        #[cfg(not(target_arch = "x86_64"))]
        pub(super) unsafe fn group(
            _: &[Tile],
            _: &QuantizedRows,
            _: Range<usize>,
            _: *mut f32,
            _: usize,
        ) {
            unreachable!("the packed kernel is only built on x86_64, and `pack` refuses elsewhere")
        }

        /// [`group`] over a run of blocks: `tiles` are those of activation blocks
        /// `first_block..first_block + tiles.len()`, and `sums` says whether the run starts
        /// each row afresh or goes on from `out`.
        ///
        /// # Safety
        /// As for [`group`], with the blocks inside `acts.blocks`; with
        /// [`Sums::Resumed`](super::Sums), `out` holds the rows' sums over the blocks before
        /// `first_block`.
        #[cfg(target_arch = "x86_64")]
        pub(crate) unsafe fn group_blocks<T: ::std::borrow::Borrow<Tile>>(
            tiles: &[T],
            acts: &QuantizedRows,
            first_block: usize,
            rows: Range<usize>,
            out: *mut f32,
            stride: usize,
            sums: Sums,
        ) {
            assert!(first_block + tiles.len() <= acts.blocks);
            let run = Run {
                tiles,
                first_block,
                sums,
            };
            // SAFETY: forwarded from the caller; each call covers rows `first..first + R` of
            // `rows`.
            unsafe {
                $crate::tiled::in_row_steps!(micro_kernel::<MR>(&run, acts, out, stride; rows))
            }
        }
    };
}
use blocks_frame;

/// Where a run of blocks starts each row's sums.
#[cfg(target_arch = "x86_64")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sums {
    /// From zero: the run is a row's first blocks.
    Fresh,
    /// From what `out` holds, which an earlier run over the row's blocks before these wrote:
    /// a row's blocks are then added in the same order, and to the same bits, however they
    /// are split into runs.
    Resumed,
}

/// The tiles of a run of blocks, where they start among the activations' blocks, and how the
/// run starts its sums (see `avx512::group_blocks`).
#[cfg(target_arch = "x86_64")]
struct Run<'t, T> {
    tiles: &'t [T],
    first_block: usize,
    sums: Sums,
}

/// A Q8_0 matrix of `rows` × `cols` (the weight of a linear layer, one output per row), packed
/// for [`PackedQ8_0::matmul`].
pub struct PackedQ8_0 {
    isa: Isa,
    rows: usize,
    cols: usize,
    /// `tiles[group * blocks + block]`, where `blocks = cols / 32`.
    tiles: ArenaSlice<Tile>,
}

packed_basics!(PackedQ8_0, "Q8_0");

impl PackedQ8_0 {
    /// [`Self::pack_for`] without the CPU check, for the scalar reference in tests.
    fn pack_portable(
        arena: &WeightArena,
        isa: Isa,
        data: &[u8],
        rows: usize,
        cols: usize,
    ) -> Result<Self, PackError> {
        let blocks = tiled::check_layout(data.len(), rows, cols, BLOCK_BYTES)?;
        let empty = Tile::EMPTY;
        let bias = weight_bias(isa);
        let mut tiles = arena
            .filled(empty, rows / TILE_ROWS * blocks)
            .ok_or(PackError::Overflow { rows, cols })?;
        for (row, bytes) in data.chunks_exact(blocks * BLOCK_BYTES).enumerate() {
            let (group, lane) = (row / TILE_ROWS, row % TILE_ROWS);
            for (block, raw) in bytes.chunks_exact(BLOCK_BYTES).enumerate() {
                let tile = &mut tiles[group * blocks + block];
                tile.scales[lane] = f16::from_le_bytes([raw[0], raw[1]]);
                for (col, &q) in raw[2..].iter().enumerate() {
                    let (word, t) = (col / 4, col % 4);
                    tile.qs[(word * TILE_ROWS + lane) * 4 + t] = q ^ bias;
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

    /// Row `row` of the weight, dequantized into `out` (`cols` values): an embedding lookup
    /// for a table tied to an output head, so the model keeps one copy of it.
    ///
    /// # Panics
    /// If `row` is not below `rows` or `out` is not `cols` long.
    pub fn dequantize_row(&self, row: usize, out: &mut [f32]) {
        assert!(row < self.rows, "row {row} of {}", self.rows);
        assert_eq!(out.len(), self.cols, "out is not cols long");
        let (group, lane) = (row / TILE_ROWS, row % TILE_ROWS);
        let blocks = self.cols / BLOCK;
        let tiles = &self.tiles[group * blocks..(group + 1) * blocks];
        let bias = weight_bias(self.isa);
        for (tile, out) in tiles.iter().zip(out.chunks_exact_mut(BLOCK)) {
            let scale = tile.scales[lane].to_f32();
            for (col, x) in out.iter_mut().enumerate() {
                let q = tile.qs[(col / 4 * TILE_ROWS + lane) * 4 + col % 4] ^ bias;
                *x = f32::from(q as i8) * scale;
            }
        }
    }

    /// `out[i][r] = Σ_c lhs[i][c] · w[r][c]` for the `m` rows of `lhs` (`m × cols`, row-major),
    /// into `out` (`m × rows`). Work is split over `threads` by groups of output columns.
    ///
    /// # Panics
    /// If `lhs` or `out` do not have the sizes above.
    pub fn matmul<'o>(&self, lhs: &[f32], m: usize, out: impl Into<MatmulOut<'o>>, threads: usize) {
        let kernels = tiled::Kernels {
            avx512: avx512::group,
            avx_vnni: avx_vnni::group,
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

//! What every packed format shares: the tile height, the layout checks and errors of packing,
//! and the parallel walk of a matmul — blocks of output row groups shared out between threads,
//! and the activation rows in slices that each pass over a block while it stays in L2.

use std::ops::Range;

use crate::OutPtr;
use crate::activations::{BLOCK, QuantizedRows, Scheme};
use crate::isa::Isa;
use crate::packed::MatmulOut;
use crate::shares::run_shared;

/// Weight rows per tile: one 512-bit register of i32 lanes, or two 256-bit ones.
pub(crate) const TILE_ROWS: usize = 16;

/// Whether a `rows` × `cols` matrix is whole tiles for a format of `block_values` values a
/// block (32, or 256 for the K-quants): the shape every `pack_in` asks for ([`PackError::Shape`]
/// otherwise), so a caller can tell before reading the weights.
pub fn fits_tiles(rows: usize, cols: usize, block_values: usize) -> bool {
    rows > 0 && cols > 0 && rows.is_multiple_of(TILE_ROWS) && cols.is_multiple_of(block_values)
}

/// Why a matrix cannot be packed; the caller keeps its ordinary path for it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PackError {
    #[error(
        "{rows}x{cols} matrix: rows must be a multiple of 16 and columns of the format's block \
         (32 values, or 256 for K-quants)"
    )]
    Shape { rows: usize, cols: usize },
    #[error("quantized data is {got} bytes, a {rows}x{cols} matrix needs {want}")]
    Length {
        rows: usize,
        cols: usize,
        got: usize,
        want: usize,
    },
    /// The matrix's byte size does not fit in `usize`: only a crafted header declares such
    /// dimensions, and in a release build the product would wrap to a small, plausible size.
    #[error("{rows}x{cols} matrix: its byte size overflows")]
    Overflow { rows: usize, cols: usize },
    #[error("this CPU has no kernel for this format (AVX2 at least)")]
    Unsupported,
}

/// Checks that `len` bytes of GGUF blocks of `block_bytes` each hold a `rows` × `cols` matrix
/// that packs into whole tiles; returns the blocks per row.
pub(crate) fn check_layout(
    len: usize,
    rows: usize,
    cols: usize,
    block_bytes: usize,
) -> Result<usize, PackError> {
    check_blocks(len, rows, cols, BLOCK, block_bytes)
}

/// [`check_layout`] for blocks of `block_values` values (256 for K-quant super-blocks).
pub(crate) fn check_blocks(
    len: usize,
    rows: usize,
    cols: usize,
    block_values: usize,
    block_bytes: usize,
) -> Result<usize, PackError> {
    if !fits_tiles(rows, cols, block_values) {
        return Err(PackError::Shape { rows, cols });
    }
    let blocks = cols / block_values;
    // The dimensions come from the model file's header: a product that wraps could equal
    // `len` and let packing index past the data or allocate for the wrapped count.
    let want = rows
        .checked_mul(blocks)
        .and_then(|n| n.checked_mul(block_bytes))
        .ok_or(PackError::Overflow { rows, cols })?;
    if len != want {
        return Err(PackError::Length {
            rows,
            cols,
            got: len,
            want,
        });
    }
    Ok(blocks)
}

/// A format's kernel on one instruction set: writes the 16 output columns of one row group
/// (`out`, rows `stride` apart) for a range of activation rows, from the group's tiles.
pub(crate) type GroupKernel<T> = unsafe fn(&[T], &QuantizedRows, Range<usize>, *mut f32, usize);

/// A format's kernels, one per instruction set, and how they take their activations.
pub(crate) struct Kernels<T> {
    pub avx512: GroupKernel<T>,
    /// The AVX-VNNI kernel: the AVX2 one where the format has none of its own, on the layout
    /// the format packs for `Isa::AvxVnni`.
    pub avx_vnni: GroupKernel<T>,
    pub avx2: GroupKernel<T>,
    /// An AVX-512 kernel that writes two row groups at once for prompt rows, from both groups'
    /// tiles (`out` at the first group's columns), where the format has one: each activation
    /// broadcast then feeds two `vpdpbusd`s.
    pub avx512_pairs: Option<GroupKernel<T>>,
    pub activations: Scheme,
}

/// Activation rows per call above which a matmul takes its row groups two at a time where the
/// format has a kernel for pairs: a prompt's rows, in slices of more than six. Decoding keeps
/// one group at a time, whose smaller takes even out the threads' shares of a pass over
/// memory; so do rows so long that a slice is four rows (a 7B's MLP down projection), where
/// the widened Q5_0 and Q4_0 pairs ran 12–13% slower (their runs widened for four rows), and
/// the unpacked Q4_K and Q5_K ones 5–17% slower (Q6_K's 3–9% faster, not worth a threshold of
/// its own).
const PAIRS_MIN_ROWS: usize = 6;

/// The frame of every packed matmul: `out = lhs · Wᵀ` for the `m` rows of `lhs` (`m × cols`,
/// row-major) into `out` (`m × rows`), where `W` (`rows × cols`) is packed as `tiles`, an equal
/// share of them per 16-row group. The activations are quantized by the kernels' scheme, then
/// `isa`'s kernel runs over the row groups on `threads` threads of rayon's pool.
///
/// # Panics
/// If `lhs` or `out` do not have the sizes above.
///
/// # Safety
/// The CPU runs `isa`, and `kernels` write only the group they are given, reading as many tiles
/// as a group holds.
#[expect(
    clippy::too_many_arguments,
    reason = "the one frame behind seven formats' matmul"
)]
pub(crate) unsafe fn matmul<T: Sync>(
    isa: Isa,
    kernels: &Kernels<T>,
    tiles: &[T],
    (rows, cols): (usize, usize),
    lhs: &[f32],
    m: usize,
    mut out: MatmulOut<'_>,
    threads: usize,
) {
    // Checked: a product that wrapped could match a short buffer, and the kernels write
    // through raw pointers sized by `m` and `rows`.
    assert_eq!(Some(lhs.len()), m.checked_mul(cols), "lhs is not m x cols");
    assert_eq!(Some(out.len()), m.checked_mul(rows), "out is not m x rows");
    let groups = rows / TILE_ROWS;
    if groups == 0 || m == 0 {
        return;
    }
    let per_group = tiles.len() / groups;
    let acts = QuantizedRows::quantize(lhs, m, cols, threads, kernels.activations);
    let kernel = match isa {
        Isa::Avx512Vnni => kernels.avx512,
        Isa::AvxVnni => kernels.avx_vnni,
        Isa::Avx2 => kernels.avx2,
    };
    let pairs = match (isa, kernels.avx512_pairs) {
        (Isa::Avx512Vnni, Some(pairs)) if m.min(slice_rows(cols)) > PAIRS_MIN_ROWS => Some(pairs),
        _ => None,
    };
    // What `run` hands out: single row groups, or pairs of them (the last one alone where
    // the groups are odd).
    let per_unit = if pairs.is_some() { 2 } else { 1 };
    let out = OutPtr(out.as_mut_ptr());
    let group_bytes = std::mem::size_of_val(&tiles[..per_group]);
    run(
        groups.div_ceil(per_unit),
        m,
        cols,
        threads,
        group_bytes * per_unit,
        &|unit, activation_rows| {
            let group = unit * per_unit;
            let taken = per_unit.min(groups - group);
            let tiles = &tiles[group * per_group..(group + taken) * per_group];
            let kernel = match pairs {
                Some(pairs) if taken == 2 => pairs,
                _ => kernel,
            };
            // SAFETY: the unit's 16 or 32 output columns are its own (`run` hands each unit
            // to one thread) inside `m` rows of `rows`; the caller vouches for `isa` and the
            // kernels, and a pair kernel is given both groups' tiles.
            unsafe {
                kernel(
                    tiles,
                    &acts,
                    activation_rows,
                    out.add(group * TILE_ROWS),
                    rows,
                )
            }
        },
    );
}

/// Calls the micro-kernel `$kernel::<R>(args…, first)` over the activation rows `$rows` in
/// steps of `$mr` rows, then once for the rest (fewer than `$mr`, at most 7), so that every
/// row of a slice shares the unpacked weights of its tile with others where it can.
macro_rules! in_row_steps {
    ($kernel:ident::<$mr:ident>($($arg:expr),*; $rows:expr)) => {{
        const _: () = assert!($mr <= 8);
        let rows: ::std::ops::Range<usize> = $rows;
        let mut first = rows.start;
        while first + $mr <= rows.end {
            $kernel::<$mr>($($arg,)* first);
            first += $mr;
        }
        match rows.end - first {
            0 => {}
            1 => $kernel::<1>($($arg,)* first),
            2 => $kernel::<2>($($arg,)* first),
            3 => $kernel::<3>($($arg,)* first),
            4 => $kernel::<4>($($arg,)* first),
            5 => $kernel::<5>($($arg,)* first),
            6 => $kernel::<6>($($arg,)* first),
            _ => $kernel::<7>($($arg,)* first),
        }
    }};
}
pub(crate) use in_row_steps;

/// Quantized activation bytes a slice of rows may take.
const SLICE_BYTES: usize = 64 * 1024;

/// Weight bytes a thread takes at a time when one pass over the groups covers every row
/// (decode): the take is one atomic operation, and small takes even out the threads' ends.
const PASS_CHUNK_BYTES: usize = 16 * 1024;

/// Weight bytes a thread takes at a time when the rows come in several slices (prefill): the
/// block's groups stay in L2 while every slice passes over them.
const SLICED_CHUNK_BYTES: usize = 256 * 1024;

/// Activation rows of `cols` values that [`run`] takes in one slice: a multiple of four rows,
/// which the kernels take at a time.
fn slice_rows(cols: usize) -> usize {
    (SLICE_BYTES / cols.max(1)).next_multiple_of(4).max(4)
}

/// Calls `run(group, rows)` for every one of `groups` weight row groups (of `group_bytes` each)
/// and every slice of the `m` activation rows (of `cols` values), on `threads` threads of
/// rayon's pool. Each group is handed to one thread only, so `run` may write the group's output
/// columns without locks.
///
/// The threads take blocks of groups (`shares`): each block goes over every slice of rows, a
/// slice staying in L1/L2 while the block's groups pass over it and the block in L2 while the
/// slices pass. Weights are then read from memory once per matmul, however many slices there
/// are. When every slice went over all of a thread's groups in turn instead, each slice read
/// them again, from memory once the matrix outgrew the last-level cache: a 256-row prompt
/// chunk through a 7B's MLP down projection (18944 columns, 4 rows a slice) ran at 97–133
/// GMAC/s on Q8_0, Q4_0, Q5_0 and Q4_K and 63–67 on Q6_K, and runs at 258–335 and 203–209
/// (2-core Zen 4 VM, `examples/packed_matmul`, in turn). Qwen2.5-0.5B's matrices fit in that
/// cache and moved inside the noise.
pub(crate) fn run(
    groups: usize,
    m: usize,
    cols: usize,
    threads: usize,
    group_bytes: usize,
    run: &(dyn Fn(usize, Range<usize>) + Sync),
) {
    if groups == 0 || m == 0 {
        return;
    }
    let slice = slice_rows(cols);
    let chunk_bytes = if m <= slice {
        PASS_CHUNK_BYTES
    } else {
        SLICED_CHUNK_BYTES
    };
    let chunk = (chunk_bytes / group_bytes.max(1)).max(1);
    run_shared(groups, threads, chunk, &|block| {
        for first in (0..m).step_by(slice) {
            let rows = first..m.min(first + slice);
            for group in block.clone() {
                run(group, rows.clone());
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::{PackError, SLICE_BYTES, check_layout, run};
    use crate::test_support::pool;

    /// Every (group, activation row) pair is handed out once, in slices of whole row steps,
    /// whether the rows take one pass or several slices, and whatever the blocks' size.
    #[test]
    fn run_covers_every_group_and_row_once() {
        let cols = 4096;
        let slice = SLICE_BYTES / cols;
        let pool = pool(2);
        for groups in [1, 7, 40] {
            for m in [1, slice - 1, slice, slice + 1, 3 * slice + 5] {
                for group_bytes in [1000, 70_000, 1 << 20] {
                    for threads in [1, 2, 3, 8] {
                        let seen = Mutex::new(vec![0u8; groups * m]);
                        pool.install(|| {
                            run(groups, m, cols, threads, group_bytes, &|group, rows| {
                                assert!(rows.len() <= slice && rows.start % slice == 0);
                                let mut seen = seen.lock().unwrap();
                                for row in rows {
                                    seen[group * m + row] += 1;
                                }
                            })
                        });
                        let seen = seen.into_inner().unwrap();
                        assert!(
                            seen.iter().all(|&n| n == 1),
                            "{groups} groups, {m} rows, {group_bytes} B, {threads} threads"
                        );
                    }
                }
            }
        }
    }

    const Q8_0_BYTES: usize = 34;

    #[test]
    fn a_well_formed_layout_gives_its_blocks_per_row() {
        assert_eq!(check_layout(16 * 3 * Q8_0_BYTES, 16, 96, Q8_0_BYTES), Ok(3));
    }

    /// Zero dimensions, rows off the tile height and columns off the block size.
    #[test]
    fn shapes_that_do_not_tile_are_refused() {
        for (rows, cols) in [(0, 32), (16, 0), (0, 0), (17, 32), (16, 33), (8, 48)] {
            assert_eq!(
                check_layout(0, rows, cols, Q8_0_BYTES),
                Err(PackError::Shape { rows, cols }),
                "{rows}x{cols}"
            );
        }
    }

    /// Dimensions a crafted header may declare: their byte size overflows, and in a release
    /// build `2^63 · 2 · 34` would wrap to 0 and match empty data.
    #[test]
    fn dimensions_whose_byte_size_overflows_are_refused() {
        let huge_rows = usize::MAX - 15; // a multiple of 16
        for (len, rows, cols) in [(0, 1 << 63, 64), (0, huge_rows, 32), (34, 16, 1 << 62)] {
            assert_eq!(
                check_layout(len, rows, cols, Q8_0_BYTES),
                Err(PackError::Overflow { rows, cols }),
                "{rows}x{cols}"
            );
        }
    }

    #[test]
    fn data_shorter_or_longer_than_the_shape_is_refused() {
        for len in [0, 16 * Q8_0_BYTES - 1, 16 * Q8_0_BYTES + 1] {
            assert!(matches!(
                check_layout(len, 16, 32, Q8_0_BYTES),
                Err(PackError::Length { got, want, .. }) if got == len && want == 16 * Q8_0_BYTES
            ));
        }
    }
}

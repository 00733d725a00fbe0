//! What the AVX-512 kernels have around their arithmetic: the entry point the tiled matmul
//! calls for one row group, the unpacking of a tile's nibbles that Q4_0, Q4_1 and Q4_K share,
//! and the store of the accumulated rows (see `avx2_frame` for the AVX2 kernels').

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// Writes a format's AVX-512 `group` for its tile type `$tile`, one tile per `$blocks`
/// activation blocks: it calls the module's `micro_kernel::<R>` over the rows in steps of its
/// `MR` (see [`in_row_steps`]). With `widened by $widen` instead, it sends prompts through the
/// tiles widened to Q8_0's, and with `unpacked in runs of $run` through the K-quant tiles
/// unpacked (see `widened`).
macro_rules! avx512_group {
    ($tile:ty, $blocks:expr) => {
        $crate::avx512_frame::avx512_group!(@group $tile, |tiles, acts, rows, out, stride| {
            debug_assert_eq!(tiles.len() * $blocks, acts.blocks);
            // SAFETY: forwarded from the caller; each call covers rows `first..first + R` of
            // `rows`.
            unsafe {
                $crate::tiled::in_row_steps!(micro_kernel::<MR>(tiles, acts, out, stride; rows))
            }
        });
    };
    // A format narrower than a byte whose tiles `$widen` widens to Q8_0's: calls of more than
    // `MR` rows (prompts) go through the widened tiles (`widened`), others (decode) through
    // `micro_kernel`.
    ($tile:ty, widened by $widen:ident) => {
        $crate::avx512_frame::avx512_group!(@group $tile, |tiles, acts, rows, out, stride| {
            debug_assert_eq!(tiles.len(), acts.blocks);
            // SAFETY (both): forwarded from the caller; `$widen` needs what the kernel does.
            if rows.len() > MR {
                unsafe {
                    $crate::widened::group(
                        tiles,
                        acts,
                        rows,
                        (out, stride),
                        $widen,
                        $crate::q8_0::group_blocks,
                    )
                }
            } else {
                unsafe {
                    $crate::tiled::in_row_steps!(micro_kernel::<MR>(tiles, acts, out, stride; rows))
                }
            }
        });

        $crate::avx512_frame::avx512_group!(
            @entry
            /// [`group`] for two row groups at once, for prompt rows: `tiles` holds the first
            /// group's tiles, then the second's, widened a run of each at a time
            /// (`widened::group_pair`).
            ///
            /// # Safety
            /// As for [`group`], for both groups' 32 columns from `out`.
            group_pair, $tile, |tiles, acts, rows, out, stride| {
                // SAFETY: forwarded from the caller; `$widen` needs what the kernel does.
                unsafe { $crate::widened::group_pair(tiles, acts, rows, out, stride, $widen) }
            }
        );
    };
    // A K-quant whose tiles unpack to `widened::UnpackedTile`s, `$run` at a time:
    // `micro_kernel::<R>` takes a `widened::Run` of either. Calls of more than `MR` rows
    // (prompts) go through the unpacked tiles, others (decode) through the tiles as they are.
    ($tile:ty, unpacked in runs of $run:expr) => {
        $crate::avx512_frame::avx512_group!(@group $tile, |tiles, acts, rows, out, stride| {
            use $crate::widened::{Run, UnpackedTile, in_runs, unpack};
            // SAFETY (both): forwarded from the caller; each run's tiles are those of its
            // super-blocks from `first`, and the runs before it wrote the rows' sums over the
            // super-blocks before them.
            if rows.len() > MR {
                unsafe {
                    in_runs::<_, UnpackedTile, { $run }, 1>(
                        [tiles],
                        unpack::<$tile>,
                        |[words], first, sums| {
                            let tiles = &tiles[first..first + words.len()];
                            let run = Run { words, tiles, first, sums };
                            $crate::tiled::in_row_steps!(micro_kernel::<MR>(
                                &run, acts, out, stride; rows.clone()
                            ))
                        },
                    )
                }
            } else {
                let sums = $crate::q8_0::Sums::Fresh;
                let run = Run { words: tiles, tiles, first: 0, sums };
                unsafe {
                    $crate::tiled::in_row_steps!(micro_kernel::<MR>(&run, acts, out, stride; rows))
                }
            }
        });
    };
    // As above, and a `group_pair` for prompt rows of two row groups at once, through the
    // module's `pair_kernel::<R>` over a `widened::Run` of each group's tiles unpacked (half
    // as many at a time, for the same stack), in steps of its `PAIR_MR` rows.
    ($tile:ty, unpacked in runs of $run:expr, with pairs) => {
        $crate::avx512_frame::avx512_group!($tile, unpacked in runs of $run);

        $crate::avx512_frame::avx512_group!(
            @entry
            /// [`group`] for two row groups at once, for prompt rows: `tiles` holds the first
            /// group's tiles, then the second's, unpacked a run of each at a time.
            ///
            /// # Safety
            /// As for [`group`], for both groups' 32 columns from `out`.
            group_pair, $tile, |tiles, acts, rows, out, stride| {
                use $crate::widened::{Run, UnpackedTile, in_runs, unpack};
                assert_eq!(tiles.len() % 2, 0);
                let groups = tiles.split_at(tiles.len() / 2);
                let groups = [groups.0, groups.1];
                // SAFETY: forwarded from the caller; each run's tiles are those of its
                // super-blocks from `first` in both groups, and the runs before it wrote both
                // groups' sums over the super-blocks before them.
                unsafe {
                    in_runs::<_, UnpackedTile, { $run / 2 }, 2>(
                        groups,
                        unpack::<$tile>,
                        |words, first, sums| {
                            let runs = [0, 1].map(|g| Run {
                                words: words[g],
                                tiles: &groups[g][first..first + words[g].len()],
                                first,
                                sums,
                            });
                            $crate::tiled::in_row_steps!(pair_kernel::<PAIR_MR>(
                                &runs, acts, out, stride; rows.clone()
                            ))
                        },
                    )
                }
            }
        );
    };
    // The entry point itself, its body written with the names it is given for its arguments,
    // and a stand-in where the kernels are not built.
    (@group $tile:ty, |$tiles:ident, $acts:ident, $rows:ident, $out:ident, $stride:ident| $body:block) => {
        $crate::avx512_frame::avx512_group!(
            @entry
            /// Writes the 16 columns of one row group for activation rows `rows`.
            ///
            /// # Safety
            /// The CPU has AVX-512 F/BW/VNNI; `out` is valid for writes of `rows.end` rows ×
            /// `stride` f32 from the start of the output; `tiles` holds the group's tiles.
            group, $tile, |$tiles, $acts, $rows, $out, $stride| $body
        );
    };
    // An entry point named `$name`, documented by `$doc`.
    (@entry $(#[$doc:meta])* $name:ident, $tile:ty,
        |$tiles:ident, $acts:ident, $rows:ident, $out:ident, $stride:ident| $body:block) => {
        $(#[$doc])*
        #[cfg(target_arch = "x86_64")]
        pub(super) unsafe fn $name(
            $tiles: &[$tile],
            $acts: &$crate::activations::QuantizedRows,
            $rows: ::std::ops::Range<usize>,
            $out: *mut f32,
            $stride: usize,
        ) $body

        #[cfg(not(target_arch = "x86_64"))]
        pub(super) unsafe fn $name(
            _: &[$tile],
            _: &$crate::activations::QuantizedRows,
            _: ::std::ops::Range<usize>,
            _: *mut f32,
            _: usize,
        ) {
            unreachable!("the packed kernel is only built on x86_64, and `pack` refuses elsewhere")
        }
    };
}
pub(crate) use avx512_group;

/// The low and the high nibbles of the four 64-byte words at `qs` (a tile's 256 bytes in
/// [`crate::PackedQ4_0`]'s order), as bytes 0..=15: `vpdpbusd`'s unsigned operand.
///
/// # Safety
/// `qs` points to 256 bytes (32-byte aligned, as tiles of 288 bytes are; the loads are
/// unaligned).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(crate) unsafe fn nibbles512(qs: *const u8) -> ([__m512i; 4], [__m512i; 4]) {
    let (qs, nibble) = (qs.cast::<__m512i>(), _mm512_set1_epi8(0x0f));
    // SAFETY: word `q` is the 64 bytes from `q * 64`, inside the caller's 256.
    let raw: [__m512i; 4] = std::array::from_fn(|q| unsafe { _mm512_loadu_si512(qs.add(q)) });
    (
        raw.map(|raw| _mm512_and_si512(raw, nibble)),
        raw.map(|raw| _mm512_and_si512(_mm512_srli_epi16(raw, 4), nibble)),
    )
}

/// Loads `R` rows of 16 columns, row `r` from `out + (first + r) · stride`: a micro-kernel's
/// sums so far, where it goes on from an earlier run of blocks.
///
/// # Safety
/// Rows `first..first + R` are the caller's, 16 initialized columns each from `out`.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn load_rows512<const R: usize>(
    out: *const f32,
    first: usize,
    stride: usize,
) -> [__m512; R] {
    // SAFETY: row `first + r` is one of the caller's rows; 16 columns from `out`.
    std::array::from_fn(|r| unsafe { _mm512_loadu_ps(out.add((first + r) * stride)) })
}

/// Stores a micro-kernel's `R` rows of 16 accumulated columns, row `r` at
/// `out + (first + r) · stride`.
///
/// # Safety
/// Rows `first..first + R` are the caller's to write, 16 columns each from `out`.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn store_rows512<const R: usize>(
    acc: &[__m512; R],
    out: *mut f32,
    first: usize,
    stride: usize,
) {
    for (r, acc) in acc.iter().enumerate() {
        // SAFETY: row `first + r` is one of the caller's rows; 16 columns from `out`.
        unsafe { _mm512_storeu_ps(out.add((first + r) * stride), *acc) };
    }
}

/// Where a micro-kernel starts its `R` rows of 16 accumulated columns: at zero, or with
/// [`Sums::Resumed`](crate::q8_0::Sums) at what `out` holds (the sums of an earlier run of
/// blocks).
///
/// # Safety
/// With `Sums::Resumed`, rows `first..first + R` are the caller's, 16 initialized columns each
/// from `out`.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn rows_start<const R: usize>(
    sums: crate::q8_0::Sums,
    out: *const f32,
    first: usize,
    stride: usize,
) -> [__m512; R] {
    match sums {
        crate::q8_0::Sums::Fresh => [_mm512_setzero_ps(); R],
        // SAFETY: forwarded from the caller.
        crate::q8_0::Sums::Resumed => unsafe { load_rows512(out, first, stride) },
    }
}

/// [`rows_start`] for a pair kernel's two row groups, group `g`'s 16 columns from `out + 16g`.
///
/// # Safety
/// As for [`rows_start`], for 32 columns from `out`.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn pair_rows_start<const R: usize>(
    sums: crate::q8_0::Sums,
    out: *const f32,
    first: usize,
    stride: usize,
) -> [[__m512; R]; 2] {
    // SAFETY: forwarded from the caller, 16 columns of each group.
    unsafe {
        [
            rows_start(sums, out, first, stride),
            rows_start(sums, out.add(16), first, stride),
        ]
    }
}

/// Stores a pair kernel's rows of both groups, group `g`'s 16 columns from `out + 16g`.
///
/// # Safety
/// Rows `first..first + R` are the caller's to write, 32 columns each from `out`.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn store_pair_rows<const R: usize>(
    acc: &[[__m512; R]; 2],
    out: *mut f32,
    first: usize,
    stride: usize,
) {
    // SAFETY: forwarded from the caller, 16 columns of each group.
    unsafe {
        store_rows512(&acc[0], out, first, stride);
        store_rows512(&acc[1], out.add(16), first, stride);
    }
}

/// One row's sums over a K-quant super-block whose sub-blocks have 6-bit scales and mins
/// (Q4_K, Q5_K), added in i32: exact, since the activations of the super-block share one
/// scale (ggml's Q8_K). Sub-block dots of up to 32 · 31 · 127 times scales of up to 63, and
/// the mins times the activation blocks' sums (at most 8 · 63 · 4064), stay far inside i32.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(crate) struct SuperSums {
    /// `Σ_j sc_j · (q · a)_j`, one lane per weight row.
    dots: __m512i,
    /// `−Σ_j m_j · Σa_j`.
    mins: __m512i,
}

#[cfg(target_arch = "x86_64")]
impl SuperSums {
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub fn new() -> Self {
        Self {
            dots: _mm512_setzero_si512(),
            mins: _mm512_setzero_si512(),
        }
    }

    /// Adds sub-block `j`'s exact dot times its scales `sc` (i32 lanes).
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub fn add_dot(&mut self, dot: __m512i, sc: __m512i) {
        self.dots = _mm512_add_epi32(self.dots, _mm512_mullo_epi32(dot, sc));
    }

    /// Adds a sub-block's dot times its scales where the dot's two 16-value halves each fit
    /// i16 (Q4_K: at most 16 · 15 · 127): `low` is the first half's sum, `high16` sixteen
    /// times the second's (the high nibbles kept in place), and `sc_pairs` holds each row's
    /// scale in both i16 halves of its lane ([`scale_pairs`]). The halves go into one lane's
    /// two i16 and one `vpdpwssd` multiplies and adds both: three µops where the sum, the
    /// multiply (two µops on Intel) and the add took five. The integers are the same.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub fn add_halves(&mut self, low: __m512i, high16: __m512i, sc_pairs: __m512i) {
        // `high16 << 12` is the second half in the lane's high i16, its low i16 zero.
        let halves = _mm512_mask_blend_epi16(0xaaaa_aaaa, low, _mm512_slli_epi32::<12>(high16));
        self.dots = _mm512_dpwssd_epi32(self.dots, halves, sc_pairs);
    }

    /// Adds the mins of the whole super-block: the tile's `mins`, and its eight activation
    /// blocks' `offsets` (`−128 · Σa`, as [`crate::activations::QuantizedRows`] holds them).
    ///
    /// Two sub-blocks at a time, as i16 pairs in one `vpdpwssd`: four instructions a row where
    /// a multiply (two µops on Intel) and an add per sub-block took 24 µops. `Σa` (at most
    /// 32 · 127 in magnitude) is `offset / −128`, exactly, and fits i16.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub fn add_mins(&mut self, mins: &MinPairs, offsets: &[i32]) {
        let offsets = &offsets[..8];
        // SAFETY: the eight offsets, 32 bytes, loaded unaligned.
        let neg_sums =
            _mm256_srai_epi32::<7>(unsafe { _mm256_loadu_si256(offsets.as_ptr().cast()) });
        // The eight `−Σa` as i16, two to a word: word `p` holds sub-blocks `2p` and `2p + 1`.
        let pairs = _mm512_castsi512_si128(_mm512_castsi256_si512(_mm512_cvtepi32_epi16(
            _mm512_castsi256_si512(neg_sums),
        )));
        let pairs: [i32; 4] = [
            _mm_cvtsi128_si32(pairs),
            _mm_extract_epi32::<1>(pairs),
            _mm_extract_epi32::<2>(pairs),
            _mm_extract_epi32::<3>(pairs),
        ];
        for (m, pair) in mins.0.iter().zip(pairs) {
            self.mins = _mm512_dpwssd_epi32(self.mins, *m, _mm512_set1_epi32(pair));
        }
    }

    /// `acc` plus the super-block: `d · a_scale` times the dots, plus `dmin · a_scale` times
    /// the mins' sums (which carry the minus).
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub fn into_acc(self, acc: __m512, d: __m512, dmin: __m512, a_scale: f32) -> __m512 {
        let dot_scale = _mm512_mul_ps(d, _mm512_set1_ps(a_scale));
        let min_scale = _mm512_mul_ps(dmin, _mm512_set1_ps(a_scale));
        let acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(self.dots), dot_scale, acc);
        _mm512_fmadd_ps(_mm512_cvtepi32_ps(self.mins), min_scale, acc)
    }
}

/// A K-quant tile's eight sub-blocks' 6-bit mins (a byte per row each), as [`SuperSums::add_mins`]
/// takes them: register `p` holds, in each row's lane, the mins of sub-blocks `2p` (low i16)
/// and `2p + 1` (high).
#[cfg(target_arch = "x86_64")]
pub(crate) struct MinPairs([__m512i; 4]);

#[cfg(target_arch = "x86_64")]
impl MinPairs {
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub fn new(mins: &[[u8; 16]; 8]) -> Self {
        Self(std::array::from_fn(|p| {
            let (low, high) = (widen_bytes16(&mins[2 * p]), widen_bytes16(&mins[2 * p + 1]));
            _mm512_or_si512(low, _mm512_slli_epi32::<16>(high))
        }))
    }
}

/// For each of `R` activation rows, the offsets `−2^SHIFT · Σa` of the sixteen 16-value halves
/// of the super-block whose first block is `first_block` (`pair_sums` are the rows', `blocks`
/// apart; see [`crate::activations::QuantizedRows::pair_sums`]), laid out so that each is one
/// broadcast load: half `h` of block `j` at `2j + h`. Worked out one at a time (each half's sum
/// and multiple in general registers, then a broadcast from one), they left the Q6_K prompt
/// kernel 14–29% slower (`examples/packed_matmul`, 2-core Intel Xeon VM).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) fn half_offsets<const R: usize, const SHIFT: u32>(
    pair_sums: &[[i32; 2]],
    blocks: usize,
    first_block: usize,
) -> [[i32; 16]; R] {
    let mut offsets = [[0i32; 16]; R];
    for (r, offsets) in offsets.iter_mut().enumerate() {
        let pairs = &pair_sums[r * blocks + first_block..][..8];
        // SAFETY: the eight blocks' sixteen words, 64 bytes, loaded unaligned.
        let pairs = unsafe { _mm512_loadu_si512(pairs.as_ptr().cast()) };
        // Each word's two i16 sums, sign-extended and added: the half's sum.
        let sums = _mm512_add_epi32(
            _mm512_srai_epi32::<16>(pairs),
            _mm512_srai_epi32::<16>(_mm512_slli_epi32::<16>(pairs)),
        );
        let scaled = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32::<SHIFT>(sums));
        // SAFETY: sixteen i32, 64 bytes, stored unaligned.
        unsafe { _mm512_storeu_si512(offsets.as_mut_ptr().cast(), scaled) };
    }
    offsets
}

/// `dots` plus a sub-block's two 16-value halves' exact sums times their i8 scales, in i32
/// (Q3_K, Q6_K): the super-block's activations share one scale (ggml's Q8_K), so the sum over
/// its sixteen halves stays exact (at most 16 · 65024 · 128 in magnitude, Q6_K's bound).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) fn add_scaled_halves(dots: __m512i, sums: [__m512i; 2], sc: [__m512i; 2]) -> __m512i {
    let scaled = _mm512_add_epi32(
        _mm512_mullo_epi32(sums[0], sc[0]),
        _mm512_mullo_epi32(sums[1], sc[1]),
    );
    _mm512_add_epi32(dots, scaled)
}

/// A sub-block's two halves' i8 scales (`[half][row]`) as i32 lanes.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) fn widen_half_scales(scales: &[[i8; 16]; 2]) -> [__m512i; 2] {
    // SAFETY: each half is 16 bytes, loaded unaligned.
    scales.map(|half| _mm512_cvtepi8_epi32(unsafe { _mm_loadu_si128(half.as_ptr().cast()) }))
}

/// `acc` plus a super-block's i32 `dots` times `d · a_scale`.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) fn add_super(acc: __m512, dots: __m512i, d: __m512, a_scale: f32) -> __m512 {
    _mm512_fmadd_ps(
        _mm512_cvtepi32_ps(dots),
        _mm512_mul_ps(d, _mm512_set1_ps(a_scale)),
        acc,
    )
}

/// A sub-block's 16 6-bit scales (a byte per row) in both i16 halves of each row's lane, as
/// [`SuperSums::add_halves`] takes them.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) fn scale_pairs(bytes: &[u8; 16]) -> __m512i {
    let scales = widen_bytes16(bytes);
    _mm512_or_si512(scales, _mm512_slli_epi32::<16>(scales))
}

/// A sub-block's 16 6-bit scales or mins (a byte per row) as i32 lanes.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) fn widen_bytes16(bytes: &[u8; 16]) -> __m512i {
    // SAFETY: the 16 bytes of `bytes`, loaded unaligned.
    _mm512_cvtepu8_epi32(unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) })
}

/// A tile's 16 f16 scales (as the file stores them) widened to f32, one per lane.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) fn widen16(scales: &[half::f16; 16]) -> __m512 {
    // SAFETY: the load reads the 32 bytes of `scales`, unaligned.
    _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(scales.as_ptr().cast()) })
}

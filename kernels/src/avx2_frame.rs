//! What every format's AVX2 kernel has around its arithmetic: the entry point the tiled matmul
//! calls for one row group, which takes the activation rows `MR` at a time and then one by
//! one, and the store of the accumulated rows.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

#[cfg(target_arch = "x86_64")]
use crate::byte_products::ByteProducts;

/// Writes a format's AVX2 `group` for its tile type `$tile`, one tile per `$blocks` activation
/// blocks: it calls the module's micro-kernel `rows::<MR>` for as many whole steps of its
/// `MR` rows as fit, then, where `MR` is 8 or more, `rows::<{ MR / 2 }>` once if that many
/// are left, then `rows::<1>` for each row left. With `rest in one call`, the rows left after
/// the whole steps take one call of a micro-kernel made for their number
/// ([`crate::tiled::in_row_steps`]): the kernels that unpack nothing gain from every row that
/// shares a word's load and lose nothing to a kernel per count.
macro_rules! avx2_group {
    ($tile:ty, $blocks:expr) => {
        $crate::avx2_frame::avx2_group!(@frame $tile, $blocks, [halving]);
    };
    ($tile:ty, $blocks:expr, rest in one call) => {
        $crate::avx2_frame::avx2_group!(@frame $tile, $blocks, [rest_in_one_call]);
    };
    // AVX-VNNI: prompt rows (more than `MR`) through the tiles widened to Q8_0's by `$widen`,
    // which the AVX-VNNI Q8_0 kernel multiplies (`widened::group`), the others as `rest in one
    // call`.
    ($tile:ty, $blocks:expr, prompts widened by $widen:path) => {
        $crate::avx2_frame::avx2_group!(@frame $tile, $blocks, [widened_by $widen]);
    };
    (@steps [halving], $tiles:ident, $acts:ident, $rows:ident, $out:ident, $stride:ident) => {{
        let mut first = $rows.start;
        // SAFETY (all three calls): forwarded from the caller; each call covers rows
        // `first..first + R`.
        while first + MR <= $rows.end {
            unsafe { self::rows::<MR>($tiles, $acts, $out, $stride, first) };
            first += MR;
        }
        // The kernels that take eight rows at once unpack a tile once for them; a prompt's
        // last few rows are spared doing it for each.
        if MR >= 8 && first + MR / 2 <= $rows.end {
            unsafe { self::rows::<{ MR / 2 }>($tiles, $acts, $out, $stride, first) };
            first += MR / 2;
        }
        while first < $rows.end {
            unsafe { self::rows::<1>($tiles, $acts, $out, $stride, first) };
            first += 1;
        }
    }};
    (
        @steps [rest_in_one_call],
        $tiles:ident, $acts:ident, $rows:ident, $out:ident, $stride:ident
    ) => {{
        // SAFETY: forwarded from the caller; each call covers rows `first..first + R` of
        // `rows`.
        unsafe {
            $crate::tiled::in_row_steps!(rows::<MR>($tiles, $acts, $out, $stride; $rows))
        }
    }};
    (
        @steps [widened_by $widen:path],
        $tiles:ident, $acts:ident, $rows:ident, $out:ident, $stride:ident
    ) => {{
        if $rows.len() > MR {
            // SAFETY: forwarded from the caller, whose CPU runs both (AVX2 and AVX-VNNI).
            unsafe {
                $crate::widened::group(
                    $tiles,
                    $acts,
                    $rows,
                    ($out, $stride),
                    $widen,
                    $crate::q8_0::vnni_group_blocks,
                )
            }
        } else {
            $crate::avx2_frame::avx2_group!(
                @steps [rest_in_one_call], $tiles, $acts, $rows, $out, $stride
            )
        }
    }};
    (@frame $tile:ty, $blocks:expr, [$($steps:tt)*]) => {
        /// Writes the 16 columns of one row group for activation rows `rows`.
        ///
        /// # Safety
        /// The CPU has what the format's `pack_for` checked for this kernel; `out` is valid for
        /// writes of `rows.end` rows × `stride` f32 from the start of the output; `tiles` holds
        /// the group's tiles.
        #[cfg(target_arch = "x86_64")]
        pub(crate) unsafe fn group(
            tiles: &[$tile],
            acts: &$crate::activations::QuantizedRows,
            rows: ::std::ops::Range<usize>,
            out: *mut f32,
            stride: usize,
        ) {
            debug_assert_eq!(tiles.len() * $blocks, acts.blocks);
            $crate::avx2_frame::avx2_group!(@steps [$($steps)*], tiles, acts, rows, out, stride)
        }

        #[cfg(not(target_arch = "x86_64"))]
        pub(crate) unsafe fn group(
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
pub(crate) use avx2_group;

/// Writes a nibble format's AVX2 `group` and, in a module `avx_vnni` beside it, its AVX-VNNI
/// one, both from the module's micro-kernel `rows_with::<R, P>` (see [`ByteProducts`]), each
/// behind an entry point `rows::<R>` that enables its instruction set's features (the only
/// place they can be enabled: a `target_feature` cannot depend on a type parameter).
macro_rules! avx2_and_vnni_groups {
    // `$mr` is the AVX-VNNI kernel's rows per micro-kernel call.
    ($tile:ty, $blocks:expr, avx-vnni rows $mr:expr) => {
        $crate::avx2_frame::avx2_and_vnni_groups!(@both $tile, $blocks, $mr, [rest in one call]);
    };
    // The AVX-VNNI kernel's prompt rows through the tiles widened by `$widen`.
    ($tile:ty, $blocks:expr, avx-vnni rows $mr:expr, prompts widened by $widen:ident) => {
        $crate::avx2_frame::avx2_and_vnni_groups!(
            @both $tile, $blocks, $mr, [prompts widened by $widen]
        );
    };
    (@both $tile:ty, $blocks:expr, $mr:expr, [$($vnni_steps:tt)*]) => {
        $crate::avx2_frame::avx2_group!($tile, $blocks);
        $crate::avx2_frame::avx2_and_vnni_groups!(
            @rows $tile, "avx2,fma,f16c", $crate::byte_products::Maddubs
        );

        /// The same kernel with AVX-VNNI's `vpdpbusd` for its byte products.
        pub(super) mod avx_vnni {
            use super::*;

            /// Activation rows per micro-kernel call (see the format's kernel).
            const MR: usize = $mr;

            $crate::avx2_frame::avx2_group!($tile, $blocks, $($vnni_steps)*);
            $crate::avx2_frame::avx2_and_vnni_groups!(
                @rows $tile, "avx2,fma,f16c,avxvnni", $crate::byte_products::Vnni
            );
        }
    };
    (@rows $tile:ty, $features:literal, $products:ty) => {
        /// # Safety
        /// As for [`group`], for rows `first..first + R`.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        unsafe fn rows<const R: usize>(
            tiles: &[$tile],
            acts: &$crate::activations::QuantizedRows,
            out: *mut f32,
            stride: usize,
            first: usize,
        ) {
            // SAFETY: forwarded from the caller, on a CPU with the features enabled here.
            unsafe { rows_with::<R, $products>(tiles, acts, out, stride, first) }
        }
    };
}
pub(crate) use avx2_and_vnni_groups;

/// Stores a micro-kernel's `R` rows of 16 accumulated columns (two registers each), row `r` at
/// `out + (first + r) · stride`.
///
/// # Safety
/// Rows `first..first + R` are the caller's to write, 16 columns each from `out`.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx")]
pub(crate) unsafe fn store_rows<const R: usize>(
    acc: &[[__m256; 2]; R],
    out: *mut f32,
    first: usize,
    stride: usize,
) {
    for (r, acc) in acc.iter().enumerate() {
        // SAFETY: row `first + r` is one of the caller's rows; 16 columns from `out`.
        unsafe {
            let row = out.add((first + r) * stride);
            _mm256_storeu_ps(row, acc[0]);
            _mm256_storeu_ps(row.add(8), acc[1]);
        }
    }
}

/// The sums of `q · a` over one 32-value block of a tile's 16 weight rows held as nibbles in
/// [`crate::PackedQ4_0`]'s order (`qs`: word `q` holding bytes `4q..4q + 4` of every row, rows
/// 0–7 then 8–15; a byte's low nibble meets activation word `q`, its high one word `q + 4`),
/// for activation block `block` of `R` rows (`acts`: the rows' words, a row every `blocks`
/// entries, and `block`),
/// summed as `P` sums byte products (see [`ByteProducts::widen`]). `[row][half]`, half 0
/// holding the tile's rows 0–7; in i16 (AVX2) each lane sums 16 products of a nibble and a
/// byte, at most 16 · 15 · 127, so none saturates. `each_word(q)` runs before word `q` is
/// loaded: the Q4_0 and Q4_1 kernels ask for a word's share of the lines ahead there
/// (`prefetch::prefetch_part_twice`).
///
/// On AVX2, for four rows or more (Q4_0's and Q4_1's prompt steps of eight and four) the four
/// words are unpacked first and each row then runs over them, keeping only its two sums in
/// registers: eight rows a call ran 20–35% faster than three word by word (Zen 2,
/// `packed_matmul`, in turn). Fewer rows go word by word with every row's sums live, which
/// Q4_K's half-by-half prompt order (`tile_sums`, three rows) needs: unpacking first made it
/// 10–20% slower. AVX-VNNI always goes word by word ([`ByteProducts::UNPACK_FIRST`]).
///
/// # Safety
/// `qs` is 32-byte aligned; runs inlined into a kernel with AVX2 and what `P` needs.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) unsafe fn nibble_sums<const R: usize, P: ByteProducts>(
    qs: &[u8; NIBBLE_BYTES],
    acts: (&[[i32; 8]], usize, usize),
    each_word: impl Fn(usize),
) -> [[__m256i; 2]; R] {
    // SAFETY: the caller's kernel has the features; `qs` is 32-byte aligned. (No closure
    // here: one has none of the kernel's features, and may stay a call.)
    unsafe {
        let mut sums = [[_mm256_setzero_si256(); 2]; R];
        if P::UNPACK_FIRST && R >= 4 {
            let values = [
                unpack_nibbles(qs, 0, &each_word),
                unpack_nibbles(qs, 1, &each_word),
                unpack_nibbles(qs, 2, &each_word),
                unpack_nibbles(qs, 3, &each_word),
            ];
            add_unpacked_rows::<R, P>(&mut sums, acts, &values);
        } else {
            for q in 0..4 {
                let values = unpack_nibbles(qs, q, &each_word);
                add_word_rows::<R, P>(&mut sums, acts, q, &values);
            }
        }
        sums
    }
}

/// Bytes of a tile's 32-value block held as nibbles, or as the low parts of 5-bit values:
/// four 64-byte words.
#[cfg(target_arch = "x86_64")]
pub(crate) const NIBBLE_BYTES: usize = 4 * 64;

/// Word `q` of a block's nibble bytes `qs`: its 64 bytes from `q * 64`, rows 0–7, then rows
/// 8–15.
///
/// # Safety
/// `qs` is 32-byte aligned; runs inlined into a kernel with AVX.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) unsafe fn load_word(qs: &[u8; NIBBLE_BYTES], q: usize) -> [__m256i; 2] {
    let word = qs[q * 64..(q + 1) * 64].as_ptr().cast::<__m256i>();
    // SAFETY: 64 bytes of `qs` from `q * 64` (the slice bounds `q`), 32-byte aligned (the
    // caller's); the kernel has AVX.
    unsafe { [_mm256_load_si256(word), _mm256_load_si256(word.add(1))] }
}

/// Word `q` of the nibble bytes `qs` (see [`nibble_sums`]) as unsigned bytes, after
/// `each_word(q)`.
///
/// # Safety
/// `qs` is 32-byte aligned; runs inlined into a kernel with AVX2.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) unsafe fn unpack_nibbles(
    qs: &[u8; NIBBLE_BYTES],
    q: usize,
    each_word: &impl Fn(usize),
) -> Nibbles {
    each_word(q);
    // SAFETY: forwarded from the caller; the kernel has AVX2.
    unsafe {
        let raw = load_word(qs, q);
        let nibble = _mm256_set1_epi8(0x0f);
        // Written out: a closure here, itself without the kernel's features, may stay a call.
        (
            [
                _mm256_and_si256(raw[0], nibble),
                _mm256_and_si256(raw[1], nibble),
            ],
            [
                _mm256_and_si256(_mm256_srli_epi16(raw[0], 4), nibble),
                _mm256_and_si256(_mm256_srli_epi16(raw[1], 4), nibble),
            ],
        )
    }
}

/// A word's values as bytes: those that meet activation word `q`, then those that meet word
/// `q + 4`, each rows 0–7 then 8–15.
#[cfg(target_arch = "x86_64")]
pub(crate) type Nibbles = ([__m256i; 2], [__m256i; 2]);

/// Adds one activation row's products with word `q`'s unsigned byte values to the row's sums
/// (rows 0–7, then 8–15; see [`ByteProducts`]); `row` is the row's activation words of the
/// block.
///
/// # Safety
/// Runs inlined into a kernel with AVX2 and what `P` needs.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) unsafe fn add_word<P: ByteProducts>(
    sums: &mut [__m256i; 2],
    row: &[i32; 8],
    q: usize,
    (low, high): &Nibbles,
) {
    // SAFETY: the caller's kernel has the features.
    unsafe {
        let (a_low, a_high) = (_mm256_set1_epi32(row[q]), _mm256_set1_epi32(row[q + 4]));
        for h in 0..2 {
            sums[h] = P::add(sums[h], (low[h], a_low), (high[h], a_high));
        }
    }
}

/// [`add_word`] for each of `R` rows: `acts` are their words, a row every `blocks` entries,
/// and the block.
///
/// # Safety
/// As for [`add_word`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) unsafe fn add_word_rows<const R: usize, P: ByteProducts>(
    sums: &mut [[__m256i; 2]; R],
    (words, blocks, block): (&[[i32; 8]], usize, usize),
    q: usize,
    values: &Nibbles,
) {
    for (r, sums) in sums.iter_mut().enumerate() {
        // SAFETY: forwarded from the caller.
        unsafe { add_word::<P>(sums, &words[r * blocks + block], q, values) };
    }
}

/// Each of `R` rows over a block's four unpacked words `values` (AVX2's order for prompts:
/// see [`ByteProducts::UNPACK_FIRST`]): `acts` are the rows' words, a row every `blocks`
/// entries, and the block.
///
/// # Safety
/// As for [`add_word`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) unsafe fn add_unpacked_rows<const R: usize, P: ByteProducts>(
    sums: &mut [[__m256i; 2]; R],
    (words, blocks, block): (&[[i32; 8]], usize, usize),
    values: &[Nibbles; 4],
) {
    for (r, sums) in sums.iter_mut().enumerate() {
        let row = &words[r * blocks + block];
        for (q, values) in values.iter().enumerate() {
            // SAFETY: forwarded from the caller.
            unsafe { add_word::<P>(sums, row, q, values) };
        }
    }
}

/// Sixteen times an activation block's pair sums of both halves (see
/// [`crate::activations::QuantizedRows::pair_sums`]), as i16 pairs in every lane: what the
/// 5-bit formats' stored values, 16 more than they mean, add to a block's sums
/// ([`ByteProducts::widen_less`]). At most 16 · 16 · 127, inside i16.
///
/// # Safety
/// Runs inlined into a kernel with AVX2.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) unsafe fn sixteen_pair_sums(pair_sums: &[i32; 2]) -> __m256i {
    // SAFETY: the caller's kernel has AVX2.
    unsafe {
        let both = _mm256_add_epi16(broadcast_i32(&pair_sums[0]), broadcast_i32(&pair_sums[1]));
        _mm256_slli_epi16(both, 4)
    }
}

/// `x` in every 32-bit lane, broadcast straight from memory: a load alone. The activations'
/// pair sums taken by value (`[i32; 2]`) came as one 64-bit load split by a shift and two
/// moves into vector registers, for every row and block.
///
/// # Safety
/// Runs inlined into a kernel with AVX.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) unsafe fn broadcast_i32(x: &i32) -> __m256i {
    // SAFETY: i32 and f32 have the same size and alignment, and every bit pattern is an f32;
    // the broadcast moves the bits as they are. The caller's kernel has AVX.
    unsafe {
        let bits = &*(x as *const i32).cast::<f32>();
        _mm256_castps_si256(_mm256_broadcast_ss(bits))
    }
}

/// Sub-blocks of a K-quant super-block (one activation block each).
#[cfg(target_arch = "x86_64")]
const SUBS: usize = crate::activations::SUPER / crate::activations::BLOCK;

/// A K-quant tile's exact sums for `R` activation rows, one `S` per half of the tile (half 0
/// its rows 0–7), each from `zero`: `sub_block(j, h, sums)` adds sub-block `j` of half `h` to
/// `sums`; for a single row, `whole_sub_block(j, sums)`, where a kernel has one, adds
/// sub-block `j` of both halves.
///
/// The order is the one that ran fastest from cache on a 2-core Zen 4 VM
/// (`examples/packed_matmul`, AVX2 kernels, in turn). A prompt's rows take one half over the
/// whole super-block, then the other, so that each row's running sums and its i16 sums of the
/// sub-block stay in the sixteen registers: a prompt chunk 12–15% faster for Q3_K, 14–22% for
/// Q6_K and 25–45% for Q2_K than sub-block by sub-block with both halves' sums live. A single
/// row (decode) takes both halves of a sub-block together, which was 12–24% faster for Q2_K
/// than half by half; given to one function, a kernel loads and broadcasts a word once for
/// both halves (Q2_K and Q6_K stream 4–8% faster so on a Zen 2; Q3_K, which has nothing to
/// share there, ran 5–10% slower through a closure of its own). (Q5_K, whose fifth bits
/// unpack for both halves at once, was no faster half by half, and keeps its own order.)
///
/// A single row asks for the lines ahead a sub-block's share at a time, twice where `NEAR`
/// says so ([`crate::prefetch::prefetch_part_twice`]): Q6_K streamed at 81–85% of the plain sum
/// asking once and 86–90% twice (2-core Zen 2 VM, three runs each in turn), while Q2_K and
/// Q3_K, whose unpacking holds them back more than the memory does, did no better (Q3_K
/// 76–84% against 82–88%) and ask once. `requests` is the CPU's kind, read once per kernel
/// call (`prefetch::WeightRequests`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn tile_sums<const R: usize, const NEAR: bool, T, S: Copy>(
    requests: crate::prefetch::WeightRequests,
    tile: &T,
    zero: S,
    mut sub_block: impl FnMut(usize, usize, &mut S),
    mut whole_sub_block: Option<impl FnMut(usize, &mut [S; 2])>,
) -> [S; 2] {
    use crate::prefetch::{prefetch_part, prefetch_part_twice};
    // Each arm is a request for a constant count of parts. A generic helper with `NEAR` and
    // the count as const parameters compiled Q6_K differently and streamed 1–2 points of the
    // plain sum slower (seven runs each in turn), so the choice stays spelled out here.
    let ask = |part: usize, parts: usize| match (NEAR, parts == SUBS) {
        (true, true) => prefetch_part_twice::<R, SUBS, _>(requests, tile, part),
        (true, false) => prefetch_part_twice::<R, { 2 * SUBS }, _>(requests, tile, part),
        (false, true) => prefetch_part::<R, SUBS, _>(requests, tile, part),
        (false, false) => prefetch_part::<R, { 2 * SUBS }, _>(requests, tile, part),
    };
    let mut sums = [zero; 2];
    if R == 1 {
        for j in 0..SUBS {
            ask(j, SUBS);
            match &mut whole_sub_block {
                Some(whole_sub_block) => whole_sub_block(j, &mut sums),
                None => {
                    for (h, sums) in sums.iter_mut().enumerate() {
                        sub_block(j, h, sums);
                    }
                }
            }
        }
    } else {
        for (h, sums) in sums.iter_mut().enumerate() {
            // The loop's own copy, which stays in registers.
            let mut half = *sums;
            for j in 0..SUBS {
                ask(h * SUBS + j, 2 * SUBS);
                sub_block(j, h, &mut half);
            }
            *sums = half;
        }
    }
    sums
}

/// `acc` plus a block's exact i32 sums `dots` (rows 0–7, then 8–15) times `d · a_scale`, the
/// weight rows' scales and the activation block's. The K-quant kernels add a super-block's
/// sub-blocks in integers, since its activations share one scale (ggml's Q8_K), and turn them
/// to f32 once.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn add_scaled(acc: &mut [__m256; 2], dots: [__m256i; 2], d: [__m256; 2], a_scale: f32) {
    let a_scale = _mm256_set1_ps(a_scale);
    for h in 0..2 {
        let scale = _mm256_mul_ps(d[h], a_scale);
        acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots[h]), scale, acc[h]);
    }
}

/// Where a micro-kernel's `R` rows of 16 columns start: at zero for a row's first blocks, or
/// with [`Sums::Resumed`](crate::q8_0::Sums) at what `out` holds (the sums of an earlier run
/// of the row's blocks), row `r` at `out + (first + r) · stride`.
///
/// # Safety
/// With `Sums::Resumed`, rows `first..first + R` are the caller's, 16 initialized columns each
/// from `out`.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx")]
pub(crate) unsafe fn rows_start<const R: usize>(
    sums: crate::q8_0::Sums,
    out: *const f32,
    first: usize,
    stride: usize,
) -> [[__m256; 2]; R] {
    let mut rows = [[_mm256_setzero_ps(); 2]; R];
    if sums == crate::q8_0::Sums::Resumed {
        for (r, row) in rows.iter_mut().enumerate() {
            // SAFETY: row `first + r` is one of the caller's rows; 16 columns from `out`.
            unsafe {
                let at = out.add((first + r) * stride);
                *row = [_mm256_loadu_ps(at), _mm256_loadu_ps(at.add(8))];
            }
        }
    }
    rows
}

/// A sub-block's 16 unsigned byte scales or mins (a byte per row) as i32 lanes, rows 0–7 then
/// 8–15.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
pub(crate) fn widen_bytes8x2(bytes: &[u8; 16]) -> [__m256i; 2] {
    let at = bytes.as_ptr().cast::<__m128i>();
    // SAFETY: the 16 bytes of `bytes`, two loads of 8.
    unsafe {
        [
            _mm256_cvtepu8_epi32(_mm_loadl_epi64(at)),
            _mm256_cvtepu8_epi32(_mm_loadl_epi64(at.cast::<u8>().add(8).cast())),
        ]
    }
}

/// The activation rows a K-quant kernel's `sub_block` reads: their words and pair sums (see
/// [`crate::activations::QuantizedRows`]), `R` rows of `blocks` entries each, and `blocks`.
pub(crate) type SubBlockActs<'a> = (&'a [[i32; 8]], &'a [[i32; 2]], usize);

/// The scales of half `h` of a tile (rows `8h..8h + 8`) for the formats whose 16-value halves
/// of a sub-block carry signed 8-bit scales (Q3_K, Q6_K): each row's two scales, each in both
/// i16 halves of the row's lane for `vpmaddwd`.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
pub(crate) fn signed_half_scales(scales: &[[i8; 16]; 2], h: usize) -> [__m256i; 2] {
    let rows = 8 * h..8 * h + 8;
    let (first, second) = (&scales[0][rows.clone()], &scales[1][rows]);
    // SAFETY: each slice is 8 bytes long, as many as each load reads.
    let (first, second) = unsafe {
        (
            _mm256_cvtepi8_epi32(_mm_loadl_epi64(first.as_ptr().cast())),
            _mm256_cvtepi8_epi32(_mm_loadl_epi64(second.as_ptr().cast())),
        )
    };
    let dup = |s: __m256i| _mm256_blend_epi16::<0xaa>(s, _mm256_slli_epi32(s, 16));
    [dup(first), dup(second)]
}

/// Rows `8h..8h + 8` of a tile's 16 per-row bytes `bytes`, row `r`'s in lane `r`: in both of
/// its i16 halves, as the low byte, the high one 0. One byte shuffle of the 16 bytes loaded
/// into both 128-bit halves: for Q2_K's nibbles it took the place of a widening load, a mask or
/// a shift, and a shift and an OR per register, which made a single row 8–15% faster (Zen 2).
/// For Q3_K's signed scales (each the high byte, then shifted down with its sign) in place of
/// [`signed_half_scales`], a row was 10% slower, and Q6_K no faster.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
pub(crate) fn row_bytes_twice(bytes: &[u8; 16], h: usize) -> __m256i {
    // The shuffle's control for each half of the rows, built at compile time: built at run
    // time, where the kernel does not know `h` there, it cost more than the shuffle saves.
    const fn control(h: usize) -> [u8; 32] {
        let mut control = [0x80; 32];
        let mut r = 0;
        while r < 8 {
            // Lanes 0–3 read the low 128-bit copy, 4–7 the high one: the same 16 bytes.
            let b = (8 * h + r) as u8;
            control[4 * r] = b;
            control[4 * r + 2] = b;
            r += 1;
        }
        control
    }
    const CONTROLS: [[u8; 32]; 2] = [control(0), control(1)];
    // SAFETY: 32 bytes of `CONTROLS` and the 16 of `bytes`, unaligned.
    let (control, bytes) = unsafe {
        (
            _mm256_loadu_si256(CONTROLS[h].as_ptr().cast()),
            _mm_loadu_si128(bytes.as_ptr().cast()),
        )
    };
    _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(bytes), control)
}

/// One row's dot product over a sub-block half for the formats stored with an offset (Q3_K's
/// values are 4 more than they mean, Q6_K's 32 more): `sums` (the i16 sums of the stored values
/// times the activations, over the half's two 16-value parts) less `2^SHIFT` times the
/// activations' `pair_sums`, each part by its scale in `dup`, summed in i32.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
pub(crate) fn offset_dot<const SHIFT: i32>(
    sums: [__m256i; 2],
    pair_sums: &[i32; 2],
    dup: [__m256i; 2],
) -> __m256i {
    // SAFETY: this function has AVX2.
    let offset = |pair_sum: &i32| _mm256_slli_epi16::<SHIFT>(unsafe { broadcast_i32(pair_sum) });
    _mm256_add_epi32(
        _mm256_madd_epi16(_mm256_sub_epi16(sums[0], offset(&pair_sums[0])), dup[0]),
        _mm256_madd_epi16(_mm256_sub_epi16(sums[1], offset(&pair_sums[1])), dup[1]),
    )
}

/// A tile's 16 f16 scales (as the file stores them) widened to f32: rows 0–7, then 8–15.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2,f16c")]
pub(crate) fn widen_halves(scales: &[half::f16; 16]) -> [__m256; 2] {
    let at = scales.as_ptr().cast::<__m128i>();
    // SAFETY: the 32 bytes of `scales` are the two 16-byte loads, which may be unaligned.
    unsafe {
        [
            _mm256_cvtph_ps(_mm_loadu_si128(at)),
            _mm256_cvtph_ps(_mm_loadu_si128(at.add(1))),
        ]
    }
}

//! How the decode kernels ask for the weights they will read next (software prefetch). A
//! decoded token reads every weight once, from memory; a kernel that waits on each line it
//! loads runs at a fraction of the memory's rate, so the kernels ask for lines a few KiB ahead
//! of the tile they multiply. Which hint, and which kernels ask at all, was measured per CPU
//! ([`WeightRequests`]; each function's figures).

use std::sync::atomic::{AtomicU8, Ordering};

/// The requests this CPU's decode kernels make. The same request that helps one maker's cores
/// halves another's rate, so the choice is the CPU's, detected once ([`Self::here`]).
///
/// On a 2-core Intel Xeon VM with AVX-512 VNNI and AMX (4 MiB of L2 a core; memory read at
/// 22–33 GB/s by two threads), `examples/packed_matmul 2 memory`, two rounds of each build in
/// turn, GB/s:
///
/// | kernels | non-temporal | into L2 |
/// |---|---|---|
/// | AVX-512 Q4_K, Q6_K | 11.4–11.6, 11.8–12.6 | 20.9–22.8, 20.8–23.1 |
/// | AVX2 Q8_0, Q4_0, Q4_K | 10.8–11.1, 11.9–12.5, 11.9–12.3 | 27.7–28.9, 27.0–28.6, 19.1–21.1 |
///
/// The light AVX-512 kernels, which ask for nothing where requests are non-temporal, asking
/// for each tile 8 KiB ahead into L2: Q8_0 23.9–24.6 → 25.7–28.1, Q4_0 19.7–20.0 → 24.0–24.8,
/// Q5_0 17.7–17.9 → 22.4–23.2, Q4_1 19.2–19.7 → 16.1–24.9 (five rounds; one slow). Asking
/// again 2 KiB ahead into L1 as well did no better. Asking into L1 instead of L2 was between
/// the two (AVX-512 Q4_K 16.5–17.2), and asking for nothing slower still for the AVX2 kernels
/// and the K-quants (AVX-512 Q4_K 18.2–18.8, AVX2 Q4_K 13.3–13.6). The 0.5B's Q4_K_M file, into
/// L2: 42.7 → 55.8 tok/s at depth 0, 35.2 → 42.8 at 4k (`hearth bench`, one run each way).
///
/// Kernels read the choice once per call and pass it down: read at every request (an atomic
/// load in the loop), the AVX2 Q8_0 kernel streamed at 19–22 GB/s against 27–28.
///
/// On AMD's Zen 2 and Zen 4 the non-temporal hint was the faster (see [`prefetch_part`] and
/// [`prefetch_ahead`]), so every other CPU keeps it. Other Intel CPUs were not measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightRequests {
    /// The K-quant and AVX2 kernels ask with the non-temporal hint; the light AVX-512 kernels
    /// (Q8_0, Q4_0, Q5_0, Q4_1) leave the stream to the hardware prefetcher.
    NonTemporal,
    /// Every kernel asks, into L2.
    IntoL2,
}

/// [`WeightRequests::here`]'s answer once known: 0 before, else the variant's code.
static HERE: AtomicU8 = AtomicU8::new(0);

impl WeightRequests {
    /// This CPU's requests: into L2 on an Intel CPU, non-temporal on any other. The variable
    /// `HEARTH_WEIGHT_REQUESTS` (`non-temporal` or `l2`) overrides the choice, to measure one
    /// against the other on the same CPU; it is read once, at the first call.
    ///
    /// Held in a static, as the standard library holds the CPU's features: it is a fact of the
    /// CPU, read at every kernel call, and never changes once known.
    #[inline(always)]
    pub fn here() -> Self {
        match HERE.load(Ordering::Relaxed) {
            1 => Self::NonTemporal,
            2 => Self::IntoL2,
            _ => Self::detect(),
        }
    }

    /// What the override names, else the CPU maker's choice; kept for [`Self::here`]. Out of
    /// line: inlined into a kernel's loop, its calls would cost the loop its registers.
    #[cold]
    #[inline(never)]
    fn detect() -> Self {
        let chosen = Self::choose();
        HERE.store(chosen.code(), Ordering::Relaxed);
        chosen
    }

    fn choose() -> Self {
        let named = std::env::var("HEARTH_WEIGHT_REQUESTS").ok();
        match named.as_deref().map(str::trim) {
            Some("non-temporal") => Self::NonTemporal,
            Some("l2") => Self::IntoL2,
            _ if cpu_is_intel() => Self::IntoL2,
            _ => Self::NonTemporal,
        }
    }

    fn code(self) -> u8 {
        match self {
            Self::NonTemporal => 1,
            Self::IntoL2 => 2,
        }
    }

    /// How `hearth bench` and the kernels' examples name it.
    pub fn describe(self) -> &'static str {
        match self {
            Self::NonTemporal => "non-temporal (light AVX-512 kernels: none)",
            Self::IntoL2 => "into L2 (every kernel)",
        }
    }
}

/// Whether the CPU says it is Intel's (`GenuineIntel`, CPUID leaf 0).
#[cfg(target_arch = "x86_64")]
fn cpu_is_intel() -> bool {
    let leaf = std::arch::x86_64::__cpuid(0);
    names_intel([leaf.ebx, leaf.edx, leaf.ecx])
}

/// Whether CPUID leaf 0's vendor registers, in the order EBX, EDX, ECX, spell `GenuineIntel`.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn names_intel(registers: [u32; 3]) -> bool {
    let mut vendor = [0u8; 12];
    for (bytes, register) in vendor.chunks_exact_mut(4).zip(registers) {
        bytes.copy_from_slice(&register.to_le_bytes());
    }
    &vendor == b"GenuineIntel"
}

#[cfg(not(target_arch = "x86_64"))]
fn cpu_is_intel() -> bool {
    false
}

/// How far ahead of the tile being multiplied the kernels ask for weights, in bytes. Decode
/// reads every weight once, from memory, and one core left to the hardware prefetcher alone
/// streamed a Q8_0 matrix at half the rate it sums plain memory (14 of 28 GB/s on a 2-core
/// EPYC VM). Asking for the lines 16 KiB ahead, into L2, made decode 30–40% faster there on
/// Q8_0 and Q4_K_M files (`examples/decode.rs`, runs taken in turn).
///
/// On the 2 MiB pages of a `WeightArena`, 8 KiB ahead does a little better: the K-quant
/// kernels streamed as fast or faster than at 16 KiB in most of six rounds each (AVX2 Q2_K
/// 27.0–28.1 GB/s against 25.8–26.3, Q6_K 35.4–36.6 against 33.9–35.2; 4 KiB no better, 32
/// KiB worse), and a whole Q4_K_M file decoded 0.6–3% faster in six pairs of six (`hearth
/// bench`, AVX-512 and AVX2 kernels, memory at 35 GB/s).
const PREFETCH_AHEAD: usize = 8 * 1024;

/// Asks the CPU to bring the lines of the tile-sized span [`PREFETCH_AHEAD`] bytes past `tile`
/// into L2, when a kernel call is for `R = 1` activation row (decode). Tiles are stored in the
/// order the kernels read them, so that span is what they read next; past the matrix's end the
/// hint is merely wasted, since prefetches never fault. A call for more rows (prefill) is
/// bound by its arithmetic, and the row steps after the first find the tiles in cache.
///
/// Not every kernel gains from it. On a 2-core Zen 4 VM (AVX-512 VNNI), streaming a matrix
/// from memory with and without it in turn, eleven rounds each (GB/s, means):
///
/// | kernel | with | without |
/// |---|---|---|
/// | Q8_0 AVX-512 | 26.9–27.3 | 30.4–32.5 |
/// | Q4_0 AVX-512 | 24.6–25.6 | 26.6–28.0 |
/// | Q5_0 AVX-512 | 28.3 | 31.2 |
/// | Q4_1 AVX-512 | 27.1 | 29.8 |
/// | Q5_1 AVX-512 | 30.0 | 17.9 |
/// | Q8_0 AVX2 | 26.6 | 21.6 |
/// | Q4_0, Q5_0 AVX2 | 27.2, 26.6 | 26.5, 27.3 |
/// | Q4_1 AVX2 | 27.4 | 29.9 |
/// | Q5_1 AVX2 | 34.8 | 26.6 |
/// | Q4_K, Q6_K AVX-512 ([`prefetch_part`]) | 25.2, 27.7 | 18.5, 13.1 |
///
/// The hardware prefetcher alone keeps up with the light AVX-512 kernels and this only gets in
/// its way; the heavier ones fall behind without it. Whole Q8_0 and Q4_0 files decoded 4–5%
/// faster without it (`examples/decode`, depth 0, eight pairings in turn, all eight faster),
/// so the AVX-512 Q8_0, Q4_0, Q5_0 and Q4_1 kernels do not call it. Why the kernels differ so
/// is not understood; a different CPU may want a different choice.
///
/// Those figures were taken on 4 KiB pages. On the 2 MiB pages of a `WeightArena`, measured
/// again the same way (four rounds each way, memory at 31–35 GB/s), asking made the AVX-512
/// Q8_0 and Q5_0 kernels slower still (33–37 against 40–44 GB/s), so the light AVX-512
/// kernels (Q8_0, Q4_0, Q5_0, Q4_1) do not ask.
///
/// The AVX2 figures above were the AVX2 kernels run on that AVX-512 CPU, where on huge pages
/// they streamed Q8_0, Q4_0 and Q5_0 faster without asking (30.4–31.1 GB/s against
/// 28.9–30.1, 31.7–33.9 against 27.4–30.2, 33.2–34.4 against 29.4–30.8). On a CPU that has
/// AVX2 alone, which is where those kernels run for users (a 2-core AMD EPYC Zen 2 VM), the
/// hardware prefetcher falls far behind them: three rounds each way in turn, memory at 22–32
/// GB/s, Q5_0 streamed at 25.0–26.0 GB/s asking against 14.3–15.4 without, Q8_0 at 23.7–24.3
/// against 19.8–20.6 and Q4_0 at 25.2–25.4 against 22.5–22.8; whole Q4_K_M, Q8_0 and Q4_0
/// files decoded 32%, 17% and 10% faster (`hearth bench`, depth 0, two pairs each). So every
/// AVX2 kernel asks. There, 4, 16 and 32 KiB ahead were no better than 8.
///
/// They no longer ask for a whole tile at its start, though: the AVX2 Q8_0, Q4_0, Q4_1, Q5_0
/// and Q5_1 kernels ask for a word's share of the lines before each of the tile's words
/// ([`prefetch_part`]), as the K-quants do per sub-block. On that Zen 2, one matrix of 94–145
/// MB a call against the plain sum just before and after (as `examples/packed_matmul`'s
/// stream table does; eight to ten runs of each build in turn), they streamed Q8_0 12% faster
/// (ten runs of ten), Q4_0 13%, Q5_1 8%, Q4_1 6% (seven of eight each) and Q5_0 2.5% (eight
/// of ten). A burst of five to nine requests a tile keeps fewer lines arriving while the tile
/// is multiplied than one or two a word. The hint made no difference there (T0, T1 and NTA
/// within the noise), nor did 4 KiB ahead instead of 8 with the requests spread. So only the
/// AVX-512 Q5_1 kernel still calls this on every CPU; on Intel's the light AVX-512 kernels call
/// it too ([`prefetch_light`], [`WeightRequests`]).
///
/// The K-quants' [`prefetch_part`] is needed on huge pages too: without it Q5_K and Q6_K
/// streamed at 9–17 GB/s.
#[inline(always)]
pub(crate) fn prefetch_ahead<const R: usize, T>(tile: &T) {
    #[cfg(target_arch = "x86_64")]
    prefetch_lines::<R, 1, T, { std::arch::x86_64::_MM_HINT_T1 }, PREFETCH_AHEAD>(tile, 0);
    #[cfg(not(target_arch = "x86_64"))]
    let _ = tile;
}

/// [`prefetch_ahead`] for part `part` of `PARTS` equal parts of the span, for kernels whose
/// tile is tens of lines (a K-quant's, 16 rows of a 256-value super-block). Asking for all of
/// them at the tile's start left Q4_K, Q5_K and Q6_K decode at 35–72% of the memory's read
/// bandwidth on a 2-core EPYC VM, likely because a burst of that many misses is more than a
/// core keeps in flight. One part per sub-block spreads the requests over the tile's work:
/// 1.3–2.3× faster in every pairing, near the bandwidth in most (`examples/packed_matmul.rs`'s
/// memory table, the two ways taken in turn).
///
/// These ask with the non-temporal hint, not for L2: on a 2-core Zen 4 VM, three rounds each
/// way in turn, the AVX-512 kernels streamed Q4_K at 29.9–30.3 GB/s against 23.6–25.1, Q5_K
/// at 28.6–30.6 against 27.5–28.6, Q6_K at 30.2–31.3 against 27.4–29.2 and Q2_K at 30.2–30.5
/// against 23.4–28.8; the AVX2 ones Q4_K at 30.0–30.5 against 26.1–29.0 and the others alike.
/// The light kernels' whole-tile requests lost with it (Q5_1 on AVX-512: 23.7–25.4 against
/// 26.5–28.7 GB/s), so [`prefetch_ahead`] keeps asking for L2.
///
/// The light AVX2 kernels call this once per word of a tile (`PARTS` of 4 or 8; one or two
/// lines each), which streams faster on a Zen 2 than a burst per tile (see
/// [`prefetch_ahead`]). The K-quants' parts were not made finer with them: a word's share for
/// the AVX2 Q4_K and Q5_K kernels, half a sub-block's for Q6_K, streamed within the noise of
/// one sub-block's (ten and two runs of each build in turn).
///
/// That was AMD's; on Intel's the non-temporal hint halved the rate, and these ask into L2
/// ([`WeightRequests`]).
#[inline(always)]
pub(crate) fn prefetch_part<const R: usize, const PARTS: usize, T>(
    requests: WeightRequests,
    tile: &T,
    part: usize,
) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_NTA, _MM_HINT_T1};
        match requests {
            WeightRequests::NonTemporal => {
                prefetch_lines::<R, PARTS, T, _MM_HINT_NTA, PREFETCH_AHEAD>(tile, part)
            }
            WeightRequests::IntoL2 => {
                prefetch_lines::<R, PARTS, T, _MM_HINT_T1, PREFETCH_AHEAD>(tile, part)
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (requests, tile, part);
}

/// The light AVX-512 kernels' request (Q8_0, Q4_0, Q5_0, Q4_1): [`prefetch_ahead`] where this
/// CPU's requests go into L2, none where they are non-temporal ([`WeightRequests`]).
#[inline(always)]
pub(crate) fn prefetch_light<const R: usize, T>(requests: WeightRequests, tile: &T) {
    if requests == WeightRequests::IntoL2 {
        prefetch_ahead::<R, T>(tile);
    }
}

/// How far ahead of the tile being multiplied the AVX2 kernels ask for weights a second time,
/// into L1 ([`prefetch_part_twice`]).
const PREFETCH_NEAR: usize = 2 * 1024;

/// [`prefetch_part`], and the same part of the span [`PREFETCH_NEAR`] bytes past `tile` into
/// L1: the AVX2 kernels' requests (Q2_K's and Q3_K's excepted, `avx2_frame::tile_sums`). On a
/// 2-core Zen 2 VM, one matrix of ~128 MiB a call set against the plain sum just before and
/// after (`examples/packed_matmul 2 stream`, six runs of each build in turn), the share of the
/// plain sum went, asking once 8 KiB ahead → asking again 2 KiB ahead:
///
/// | format | once | twice |
/// |---|---|---|
/// | Q4_0 | 89–98% | 92–103% |
/// | Q4_1 | 87–97% | 92–103% |
/// | Q5_0 | 93–98% | 95–104% |
/// | Q5_1 | 89–95% | 93–102% |
/// | Q8_0 | 85–97% | 86–101% |
/// | Q4_K | 83–93% | 92–95% |
/// | Q5_K | 79–87% | 83–89% |
/// | Q6_K | 81–87% | 84–92% |
///
/// 1 and 4 KiB did as well on some formats and worse on others. Whole files at depth 0
/// (`hearth bench`, in turn): a Qwen2.5-1.5B-shaped Q4_K_M file, mostly Q4_K and Q6_K,
/// decoded at 26.0–26.3 → 26.9–27.3 tok/s (three pairs); the 0.5B's files, whose large
/// matrices are Q8_0 and Q5_0, within the noise (Q4_K_M 60.3–64.0 → 62.8–65.3 and Q4_0
/// 70.7–71.8 → 71.1–73.6 in five pairs; Q4_K_M no faster in two more). The AVX-512 kernels
/// were not measured with it (no such CPU at hand), so they ask once.
#[inline(always)]
pub(crate) fn prefetch_part_twice<const R: usize, const PARTS: usize, T>(
    requests: WeightRequests,
    tile: &T,
    part: usize,
) {
    prefetch_part::<R, PARTS, T>(requests, tile, part);
    #[cfg(target_arch = "x86_64")]
    prefetch_lines::<R, PARTS, T, { std::arch::x86_64::_MM_HINT_T0 }, PREFETCH_NEAR>(tile, part);
}

/// Asks, with the hint `HINT`, for part `part` of `PARTS` of the lines of the tile-sized span
/// `AHEAD` bytes past `tile`, when the call is for one activation row.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefetch_lines<const R: usize, const PARTS: usize, T, const HINT: i32, const AHEAD: usize>(
    tile: &T,
    part: usize,
) {
    if R == 1 {
        let lines = size_of::<T>().div_ceil(64);
        let ahead = (tile as *const T).cast::<i8>().wrapping_add(AHEAD);
        for line in part * lines / PARTS..(part + 1) * lines / PARTS {
            // SAFETY: a prefetch is a hint that never faults, whatever the address; SSE, which
            // it needs, is part of x86_64.
            unsafe { std::arch::x86_64::_mm_prefetch::<HINT>(ahead.wrapping_add(line * 64)) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vendor_registers_name_intel_only_for_intel() {
        let spell = |name: &[u8; 12]| -> [u32; 3] {
            std::array::from_fn(|i| u32::from_le_bytes(name[4 * i..][..4].try_into().unwrap()))
        };
        assert!(names_intel(spell(b"GenuineIntel")));
        assert!(!names_intel(spell(b"AuthenticAMD")));
        assert!(!names_intel(spell(b"HygonGenuine")));
        // The registers' order matters: EBX, EDX, ECX.
        let [ebx, edx, ecx] = spell(b"GenuineIntel");
        assert!(!names_intel([ebx, ecx, edx]));
    }

    #[test]
    fn the_choice_is_made_once_and_kept() {
        let first = WeightRequests::here();
        assert_eq!(WeightRequests::here(), first);
        assert_eq!(WeightRequests::choose(), first);
    }
}

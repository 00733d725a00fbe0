//! Prints every packed kernel's speed, on each instruction set this CPU runs, against the
//! CPU's measured int8 multiply-accumulate peak: Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 on the shapes
//! of Qwen2.5-0.5B's layers, the K-quants (Q2_K to Q6_K) on the shapes of K-quant files whose
//! rows are multiples of 256 (the 0.5B's MLP down projection and the 1.5B's layers), each also
//! on a 7B's MLP down projection, for one token (decode) and for a prefill chunk of 256, so
//! kernel changes can be compared in isolation. A second table has each format decode from memory rather than cache, against the
//! memory's read bandwidth (the bound `hearth bench` prints):
//!   cargo run --release -p hearth-kernels --example packed_matmul [threads]
//!     [compute|memory|both|stream] [FORMAT,…]
//! Threads default to the rayon pool's (`RAYON_NUM_THREADS`); both tables and every format by
//! default (e.g. `2 both Q8_0,Q4_0` for those two alone). `stream` prints a third table alone,
//! for comparing two builds' streaming from memory on a machine whose bandwidth drifts: one
//! large matrix per call, each run set against the plain sum just before and after it; run
//! the two builds' examples in turn, several times each.

use std::time::{Duration, Instant};

use hearth_kernels::{
    BandwidthProbe, Isa, PackedMatrix, PackedQ2_K, PackedQ3_K, PackedQ4_0, PackedQ4_1, PackedQ4_K,
    PackedQ5_0, PackedQ5_1, PackedQ5_K, PackedQ6_K, PackedQ8_0, WeightArena, WeightRequests,
};

/// Qwen2.5-7B's MLP down projection: a matrix far past the last-level cache, whose long rows
/// cut a prompt chunk into many slices (see `tiled::run`).
const DOWN_7B: (&str, usize, usize) = ("7B down 3584x18944", 3584, 18944);

/// (name, output rows, input columns): attention q/o, k/v, the MLP's gate/up and down, then
/// a 7B's down projection.
const SHAPES: [(&str, usize, usize); 5] = [
    ("q/o 896x896", 896, 896),
    ("k/v 128x896", 128, 896),
    ("gate/up 4864x896", 4864, 896),
    ("down 896x4864", 896, 4864),
    DOWN_7B,
];

/// K-quant shapes: Qwen2.5-0.5B's MLP down projection (its only K-quant tensors in Q4_K_M, the
/// 896-wide ones being Q5_0 or Q8_0 there), then Qwen2.5-1.5B's q/o, gate/up and down, then a
/// 7B's down projection.
const K_SHAPES: [(&str, usize, usize); 5] = [
    ("0.5B down 896x4864", 896, 4864),
    ("q/o 1536x1536", 1536, 1536),
    ("gate/up 8960x1536", 8960, 1536),
    ("down 1536x8960", 1536, 8960),
    DOWN_7B,
];

/// A format's name, its GGUF block (values, bytes), and how to pack it for a kernel.
struct Format {
    name: &'static str,
    block: (usize, usize),
    pack: fn(&WeightArena, Isa, &[u8], usize, usize) -> Option<Packed>,
}

/// A matrix of any format, packed for one instruction set.
type Packed = Box<dyn PackedMatrix>;

const FORMATS: [Format; 10] = [
    Format {
        name: "Q8_0",
        block: (32, 34),
        pack: |arena, isa, data, rows, cols| {
            Some(Box::new(
                PackedQ8_0::pack_in(arena, isa, data, rows, cols).ok()?,
            ))
        },
    },
    Format {
        name: "Q4_0",
        block: (32, 18),
        pack: |arena, isa, data, rows, cols| {
            Some(Box::new(
                PackedQ4_0::pack_in(arena, isa, data, rows, cols).ok()?,
            ))
        },
    },
    Format {
        name: "Q4_1",
        block: (32, 20),
        pack: |arena, isa, data, rows, cols| {
            Some(Box::new(
                PackedQ4_1::pack_in(arena, isa, data, rows, cols).ok()?,
            ))
        },
    },
    Format {
        name: "Q5_0",
        block: (32, 22),
        pack: |arena, isa, data, rows, cols| {
            Some(Box::new(
                PackedQ5_0::pack_in(arena, isa, data, rows, cols).ok()?,
            ))
        },
    },
    Format {
        name: "Q5_1",
        block: (32, 24),
        pack: |arena, isa, data, rows, cols| {
            Some(Box::new(
                PackedQ5_1::pack_in(arena, isa, data, rows, cols).ok()?,
            ))
        },
    },
    Format {
        name: "Q2_K",
        block: (256, 84),
        pack: |arena, isa, data, rows, cols| {
            Some(Box::new(
                PackedQ2_K::pack_in(arena, isa, data, rows, cols).ok()?,
            ))
        },
    },
    Format {
        name: "Q3_K",
        block: (256, 110),
        pack: |arena, isa, data, rows, cols| {
            Some(Box::new(
                PackedQ3_K::pack_in(arena, isa, data, rows, cols).ok()?,
            ))
        },
    },
    Format {
        name: "Q4_K",
        block: (256, 144),
        pack: |arena, isa, data, rows, cols| {
            Some(Box::new(
                PackedQ4_K::pack_in(arena, isa, data, rows, cols).ok()?,
            ))
        },
    },
    Format {
        name: "Q5_K",
        block: (256, 176),
        pack: |arena, isa, data, rows, cols| {
            Some(Box::new(
                PackedQ5_K::pack_in(arena, isa, data, rows, cols).ok()?,
            ))
        },
    },
    Format {
        name: "Q6_K",
        block: (256, 210),
        pack: |arena, isa, data, rows, cols| {
            Some(Box::new(
                PackedQ6_K::pack_in(arena, isa, data, rows, cols).ok()?,
            ))
        },
    },
];

fn main() {
    let mut args = std::env::args().skip(1);
    let threads = args
        .next()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(rayon::current_num_threads);
    let tables = args.next();
    let wanted = args.next();
    let formats: Vec<&Format> = FORMATS
        .iter()
        .filter(|f| {
            wanted
                .as_ref()
                .is_none_or(|w| w.split(',').any(|w| w == f.name))
        })
        .collect();
    let isas: Vec<Isa> = Isa::ALL.into_iter().filter(|i| i.available()).collect();
    if isas.is_empty() {
        eprintln!("this CPU has neither AVX-512 VNNI nor AVX2");
        std::process::exit(1);
    }
    let mut next = xorshift(0x2545_f491_4f6c_dd1d);
    if tables.as_deref() == Some("stream") {
        stream_table(&formats, &isas, threads, &mut next);
        return;
    }
    if tables.as_deref() != Some("memory") {
        compute_table(&formats, &isas, threads, &mut next);
    }
    if tables.as_deref() != Some("compute") {
        memory_table(&formats, &isas, threads, &mut next);
    }
}

/// Each format on each shape, for one activation row and for 256, from cache: the matrix is
/// multiplied again and again.
fn compute_table(
    formats: &[&Format],
    isas: &[Isa],
    threads: usize,
    next: &mut impl FnMut() -> u64,
) {
    println!("{threads} threads; int8 multiply-accumulate peak, measured:");
    for &isa in isas {
        println!("  {isa:?}: {:.0} GMAC/s", int8_peak(isa, threads) / 1e9);
    }
    print!("\n{:<5} {:<18} {:>4}", "fmt", "shape", "m");
    for isa in isas {
        print!(" {:>12} {:>7}", format!("{isa:?} ms"), "GMAC/s");
    }
    println!();
    for format in formats {
        for (name, rows, cols) in format.shapes() {
            let data = random_blocks(format, rows * cols / format.block.0, next);
            let packed: Vec<Packed> = isas
                .iter()
                .filter_map(|&isa| (format.pack)(&WeightArena::new(), isa, &data, rows, cols))
                .collect();
            for m in [1, 256] {
                let lhs = activations(m * cols, next);
                let mut out = vec![0f32; m * rows];
                let macs = (m * rows * cols) as f64;
                print!("{:<5} {name:<18} {m:>4}", format.name);
                for matrix in &packed {
                    let time = best_time(|| matrix.matmul(&lhs, m, &mut out, threads));
                    print!(" {:>12.3} {:>7.1}", time * 1e3, macs / time / 1e9);
                }
                println!();
            }
        }
    }
}

/// What decoding meets: one activation row against weights that come from memory, not cache.
/// Distinct copies of a format's gate/up matrix, [`STREAM_BYTES`] of them in all, are each
/// multiplied once per round, and the file's bytes over the best round's time are set against
/// the memory's read bandwidth (`hearth bench`'s bound), measured before and after.
///
/// The header also gives what one thread's plain sum reads. Where one thread reads about the
/// whole figure divided by the threads (a 2-core Zen 2 VM: 17.6–18.0 GB/s alone, 33–34 on
/// two), each core reads what it can keep in flight, not what the memory could give: there the
/// kernels stream at 85–93% of one thread's sum on one thread, and at 82–90% of the two
/// threads' on two.
fn memory_table(formats: &[&Format], isas: &[Isa], threads: usize, next: &mut impl FnMut() -> u64) {
    // One buffer for the three sums: each `measure_bandwidth` allocates and writes its own.
    let probe = BandwidthProbe::new();
    let bandwidth = probe.measure(threads);
    print!(
        "\ndecode from memory, {threads} threads; read bandwidth {:.1} GB/s",
        bandwidth / 1e9
    );
    if threads > 1 {
        print!(" ({:.1} on one thread)", probe.measure(1) / 1e9);
    }
    println!();
    print_weight_requests();
    print!("{:<5} {:<18} {:>6}", "fmt", "shape", "copies");
    for isa in isas {
        print!(" {:>12} {:>9}", format!("{isa:?} GB/s"), "of bound");
    }
    println!();
    for format in formats {
        let (name, rows, cols) = format.shapes()[2];
        let data = random_blocks(format, rows * cols / format.block.0, next);
        let copies = STREAM_BYTES.div_ceil(data.len());
        let lhs = activations(cols, next);
        let mut out = vec![0f32; rows];
        print!("{:<5} {name:<18} {copies:>6}", format.name);
        for &isa in isas {
            // In one arena, as a model's matrices are packed.
            let arena = WeightArena::new();
            let Some(matrices) = (0..copies)
                .map(|_| (format.pack)(&arena, isa, &data, rows, cols))
                .collect::<Option<Vec<_>>>()
            else {
                continue;
            };
            let round = (0..4)
                .map(|_| {
                    let start = Instant::now();
                    for matrix in &matrices {
                        matrix.matmul(&lhs, 1, &mut out, threads);
                    }
                    start.elapsed().as_secs_f64()
                })
                .fold(f64::INFINITY, f64::min);
            let rate = (copies * data.len()) as f64 / round;
            print!(" {:>12.1} {:>8.0}%", rate / 1e9, 100.0 * rate / bandwidth);
        }
        println!();
    }
    println!(
        "read bandwidth after: {:.1} GB/s",
        probe.measure(threads) / 1e9
    );
}

/// Decode's streaming as a whole-model token meets it in its largest matrix (the output
/// head): one matrix of about [`STREAM_ONE_BYTES`] per call, in a pool of `threads` as the
/// engine runs it. Each of [`STREAM_RUNS`] runs is a warm-up call and three timed ones; its
/// median is set against the better of the plain sums just before and after it, so that a
/// drift of the memory's speed between runs (a third within minutes on a shared VM) moves
/// both. Prints the medians over the runs.
///
/// A matrix read again at once reads faster than one read after other memory: on a 2-core
/// Zen 2 VM the same Q8_0 kernel streamed a 145 MB matrix at 33.5–34.8 GB/s called again and
/// again, and at 29.1–30.5 when 8 MB of other reads, or a 0.5B's layers, came between the
/// calls (the memory table's distinct copies read at 82–90%, this table at 92–101%). Weigh a
/// change to what decoding reads against the memory table too.
fn stream_table(formats: &[&Format], isas: &[Isa], threads: usize, next: &mut impl FnMut() -> u64) {
    let probe = BandwidthProbe::new();
    let Ok(pool) = rayon::ThreadPoolBuilder::new().num_threads(threads).build() else {
        eprintln!("no pool of {threads} threads");
        return;
    };
    println!(
        "\none matrix of ~{} MiB a call, {threads} threads, {STREAM_RUNS} runs; medians",
        STREAM_ONE_BYTES >> 20
    );
    print_weight_requests();
    println!(
        "{:<5} {:<16} {:<11} {:>6} {:>9}",
        "fmt", "shape", "kernel", "GB/s", "of sum"
    );
    for format in formats {
        let (_, _, cols) = format.shapes()[2];
        let (values, bytes) = format.block;
        let rows = (STREAM_ONE_BYTES / (cols / values * bytes)).next_multiple_of(16);
        let data = random_blocks(format, rows * cols / values, next);
        let lhs = activations(cols, next);
        let mut out = vec![0f32; rows];
        for &isa in isas {
            let Some(matrix) = (format.pack)(&WeightArena::new(), isa, &data, rows, cols) else {
                continue;
            };
            let (mut rates, mut shares) = (Vec::new(), Vec::new());
            pool.install(|| {
                for _ in 0..STREAM_RUNS {
                    let before = probe.measure(threads);
                    matrix.matmul(&lhs, 1, &mut out, threads);
                    let rate = median(
                        (0..3)
                            .map(|_| {
                                let start = Instant::now();
                                matrix.matmul(&lhs, 1, &mut out, threads);
                                data.len() as f64 / start.elapsed().as_secs_f64()
                            })
                            .collect(),
                    );
                    let after = probe.measure(threads);
                    rates.push(rate);
                    shares.push(rate / before.max(after));
                }
            });
            let shape = format!("{rows}x{cols}");
            println!(
                "{:<5} {shape:<16} {:<11} {:>6.1} {:>8.0}%",
                format.name,
                format!("{isa:?}"),
                median(rates) / 1e9,
                100.0 * median(shares)
            );
        }
    }
}

/// The middle one of an odd number of figures.
fn median(mut figures: Vec<f64>) -> f64 {
    figures.sort_by(f64::total_cmp);
    figures[figures.len() / 2]
}

/// About the size of Qwen2.5-0.5B's output head in Q8_0 (145 MB).
const STREAM_ONE_BYTES: usize = 128 << 20;

/// Runs per format in the stream table; odd, for a median.
const STREAM_RUNS: usize = 9;

/// Bytes of distinct weights the memory table streams per format: far past any cache.
const STREAM_BYTES: usize = 512 << 20;

fn activations(len: usize, next: &mut impl FnMut() -> u64) -> Vec<f32> {
    (0..len)
        .map(|_| (next() % 2000) as f32 / 1000.0 - 1.0)
        .collect()
}

impl Format {
    /// The shapes a format is timed on: the 0.5B's for 32-value blocks, K-quant ones for the
    /// 256-value blocks that need rows of that multiple.
    fn shapes(&self) -> [(&'static str, usize, usize); 5] {
        match self.block.0 {
            256 => K_SHAPES,
            _ => SHAPES,
        }
    }
}

/// Random GGUF blocks of `format` whose scales are small and finite.
fn random_blocks(format: &Format, blocks: usize, next: &mut impl FnMut() -> u64) -> Vec<u8> {
    let (_, bytes) = format.block;
    let scale = half::f16::from_f32(0.001).to_le_bytes();
    let mut data = Vec::with_capacity(blocks * bytes);
    for _ in 0..blocks {
        let start = data.len();
        data.extend((0..bytes).map(|_| next() as u8));
        // Where each format keeps its f16 scales: first (Q8_0, Q4_0, Q5_0, and Q4_1's and
        // Q5_1's `d` and `m`, Q4_K's and Q5_K's `d` and `dmin`), or last (Q3_K's and Q6_K's
        // `d`, Q2_K's `d` and `dmin`).
        match format.name {
            "Q3_K" | "Q6_K" => data[start + bytes - 2..start + bytes].copy_from_slice(&scale),
            "Q2_K" => {
                data[start + bytes - 4..start + bytes - 2].copy_from_slice(&scale);
                data[start + bytes - 2..start + bytes].copy_from_slice(&scale);
            }
            "Q4_1" | "Q5_1" | "Q4_K" | "Q5_K" => {
                data[start..start + 2].copy_from_slice(&scale);
                data[start + 2..start + 4].copy_from_slice(&scale);
            }
            _ => data[start..start + 2].copy_from_slice(&scale),
        }
    }
    data
}

fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}

/// Multiply-accumulates per second that `threads` threads reach in a loop of independent
/// int8 dot-product instructions and nothing else: the roof a kernel of `isa` works under.
fn int8_peak(isa: Isa, threads: usize) -> f64 {
    const ITERATIONS: u64 = 20_000_000;
    let start = Instant::now();
    rayon::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|_| {
                std::hint::black_box(peak_loop(isa, ITERATIONS));
            });
        }
    });
    let seconds = start.elapsed().as_secs_f64();
    // Per iteration, twelve 512-bit `vpdpbusd`, twelve 256-bit ones or six 256-bit
    // `vpmaddubsw` pairs.
    let macs_per_iteration = match isa {
        Isa::Avx512Vnni => 12 * 64,
        Isa::AvxVnni => 12 * 32,
        Isa::Avx2 => 6 * 32,
    };
    (threads as u64 * ITERATIONS * macs_per_iteration) as f64 / seconds
}

#[cfg(target_arch = "x86_64")]
fn peak_loop(isa: Isa, iterations: u64) -> i32 {
    // SAFETY: `isa` is one this CPU runs (checked by the caller's filter).
    unsafe {
        match isa {
            Isa::Avx512Vnni => peak_vnni(iterations),
            Isa::AvxVnni => peak_avx_vnni(iterations),
            Isa::Avx2 => peak_avx2(iterations),
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn peak_loop(_: Isa, _: u64) -> i32 {
    0
}

/// # Safety
/// The CPU has AVX-512 F/VNNI.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn peak_vnni(iterations: u64) -> i32 {
    use std::arch::x86_64::*;
    let (a, b) = (_mm512_set1_epi8(3), _mm512_set1_epi8(-5));
    // Twelve chains: `vpdpbusd` takes about 5 cycles, and a core may start two a cycle.
    let mut acc = [_mm512_setzero_si512(); 12];
    for _ in 0..iterations {
        for acc in &mut acc {
            *acc = _mm512_dpbusd_epi32(*acc, a, b);
        }
    }
    acc.iter()
        .map(|&v| _mm512_reduce_add_epi32(v))
        .fold(0, i32::wrapping_add)
}

/// # Safety
/// The CPU has AVX2 and AVX-VNNI.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avxvnni")]
unsafe fn peak_avx_vnni(iterations: u64) -> i32 {
    use std::arch::x86_64::*;
    let (a, b) = (_mm256_set1_epi8(3), _mm256_set1_epi8(-5));
    let mut acc = [_mm256_setzero_si256(); 12];
    for _ in 0..iterations {
        for acc in &mut acc {
            *acc = _mm256_dpbusd_avx_epi32(*acc, a, b);
        }
    }
    // Every chain's sum is used, or the compiler drops the chains.
    let sum = acc.into_iter().fold(_mm256_setzero_si256(), |sum, acc| {
        _mm256_add_epi32(sum, acc)
    });
    let mut lanes = [0i32; 8];
    // SAFETY: 32 bytes into `lanes`' 32.
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), sum) };
    lanes.iter().fold(0, |sum, &lane| sum.wrapping_add(lane))
}

/// # Safety
/// The CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn peak_avx2(iterations: u64) -> i32 {
    use std::arch::x86_64::*;
    let (a, b, ones) = (
        _mm256_set1_epi8(3),
        _mm256_set1_epi8(-5),
        _mm256_set1_epi16(1),
    );
    let mut acc = [_mm256_setzero_si256(); 6];
    // The AVX2 kernels' pair (byte products summed in i16, then widened to i32) in assembly:
    // with constant operands, a compiler hoists the products out of the loop.
    // SAFETY: register-only arithmetic on AVX2 registers (ymm0–15), which the caller checked.
    unsafe {
        std::arch::asm!(
            "2:",
            "vpmaddubsw {t0}, {a}, {b}", "vpmaddwd {t0}, {t0}, {ones}", "vpaddd {c0}, {c0}, {t0}",
            "vpmaddubsw {t1}, {a}, {b}", "vpmaddwd {t1}, {t1}, {ones}", "vpaddd {c1}, {c1}, {t1}",
            "vpmaddubsw {t2}, {a}, {b}", "vpmaddwd {t2}, {t2}, {ones}", "vpaddd {c2}, {c2}, {t2}",
            "vpmaddubsw {t3}, {a}, {b}", "vpmaddwd {t3}, {t3}, {ones}", "vpaddd {c3}, {c3}, {t3}",
            "vpmaddubsw {t4}, {a}, {b}", "vpmaddwd {t4}, {t4}, {ones}", "vpaddd {c4}, {c4}, {t4}",
            "vpmaddubsw {t5}, {a}, {b}", "vpmaddwd {t5}, {t5}, {ones}", "vpaddd {c5}, {c5}, {t5}",
            "dec {n}",
            "jnz 2b",
            n = inout(reg) iterations => _,
            a = in(ymm_reg) a,
            b = in(ymm_reg) b,
            ones = in(ymm_reg) ones,
            t0 = out(ymm_reg) _,
            t1 = out(ymm_reg) _,
            t2 = out(ymm_reg) _,
            t3 = out(ymm_reg) _,
            t4 = out(ymm_reg) _,
            t5 = out(ymm_reg) _,
            c0 = inout(ymm_reg) acc[0],
            c1 = inout(ymm_reg) acc[1],
            c2 = inout(ymm_reg) acc[2],
            c3 = inout(ymm_reg) acc[3],
            c4 = inout(ymm_reg) acc[4],
            c5 = inout(ymm_reg) acc[5],
            options(nomem, nostack),
        );
    }
    let mut lanes = [0i32; 8];
    let sum = acc
        .into_iter()
        .fold(_mm256_setzero_si256(), |s, v| _mm256_add_epi32(s, v));
    // SAFETY: 8 i32 lanes into an 8-element array.
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), sum) };
    lanes.iter().fold(0, |a, &b| a.wrapping_add(b))
}

/// Seconds per call: the best of several windows, since on a shared machine the others only
/// add noise.
fn best_time(mut call: impl FnMut()) -> f64 {
    call();
    let mut best = f64::INFINITY;
    for _ in 0..6 {
        let (mut calls, start) = (0u32, Instant::now());
        while start.elapsed() < Duration::from_millis(150) {
            call();
            calls += 1;
        }
        best = best.min(start.elapsed().as_secs_f64() / f64::from(calls));
    }
    best
}

/// The kernels' requests for the weights ahead of use, and how to measure the other kind.
fn print_weight_requests() {
    println!(
        "weight requests: {} (set HEARTH_WEIGHT_REQUESTS=non-temporal or l2 to compare)",
        WeightRequests::here().describe()
    );
}

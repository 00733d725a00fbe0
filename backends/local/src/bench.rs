//! `hearth bench`: prefill and decode speed at several context depths, cold versus warm time to
//! first token for a long conversation, a new session's first token with its system turn read
//! from disk, peak RSS and the memory-bandwidth bound. Prints figures; asserts nothing.

use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::engine::{Engine, EngineConfig, EngineEvent, GenerateRequest, Health, Prompt};
use crate::error::EngineError;
use crate::memory::{huge_page_bytes, huge_page_setting, peak_rss, release_freed, reset_peak_rss};
use crate::model::{GgufFile, Kernels, KvCache, Model};
use crate::sampler::{SamplingParams, argmax};
use crate::tokenizer::TextTokenizer;
use hearth_kernels::BandwidthProbe;

/// What to measure.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub model_path: PathBuf,
    /// Context depths to measure at.
    pub depths: Vec<usize>,
    /// Prompt tokens timed per prefill measurement.
    pub prefill_tokens: usize,
    /// Tokens timed per decode measurement.
    pub decode_tokens: usize,
    /// Conversation length for the cold/warm time-to-first-token comparison.
    pub conversation_tokens: usize,
    /// New tokens the warm turn adds.
    pub turn_tokens: usize,
    /// Whether to run the cold/warm comparison at all.
    pub ttft: bool,
    /// The matmul kernels the depth rows run on (the cold/warm comparison runs the engine,
    /// which always takes the fastest).
    pub kernels: Kernels,
}

impl BenchConfig {
    pub fn new(model_path: impl Into<PathBuf>) -> Self {
        Self {
            model_path: model_path.into(),
            depths: vec![0, 1024, 4096],
            prefill_tokens: 256,
            decode_tokens: 32,
            conversation_tokens: 4096,
            turn_tokens: 100,
            ttft: true,
            kernels: Kernels::Fastest,
        }
    }
}

/// Time to first token of a new session whose system turn an earlier one saved
/// (`engine/prefix_store.rs`), against reading it all.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSession {
    /// Tokens of the system turn.
    pub system_tokens: usize,
    /// The first session: every token read.
    pub cold: Duration,
    /// The next, in an engine of its own: the system turn from disk.
    pub from_disk: Duration,
    /// Prompt tokens the next session did not read.
    pub reused: usize,
}

/// A system turn as long as the agent's instructions and tool list.
const SESSION_SYSTEM_TOKENS: usize = 1400;

/// Speeds at one depth.
#[derive(Debug, Clone, PartialEq)]
pub struct DepthRow {
    pub depth: usize,
    pub prefill_tok_s: f64,
    pub decode_tok_s: f64,
    /// The memory's read bandwidth, measured between this row's decode rounds: the bound its
    /// decode is set against, taken beside it because on a shared machine the bandwidth moves
    /// by a third from one minute to the next.
    pub bandwidth_bytes_s: f64,
}

/// The figures.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchReport {
    pub model: PathBuf,
    pub quantization: String,
    /// How many matmuls each kernel serves, e.g. `("Q8_0 Avx512Vnni", 73)`.
    pub kernels: Vec<(String, usize)>,
    /// How those kernels ask for the weights ahead of use, when any packed kernel runs.
    pub weight_requests: Option<hearth_kernels::WeightRequests>,
    pub device: String,
    pub threads: usize,
    pub load: Duration,
    pub rows: Vec<DepthRow>,
    /// Cold and warm time to first token, when measured.
    pub ttft: Option<(Duration, Duration)>,
    /// A new session's first token, read cold and with its system turn from disk.
    pub new_session: Option<NewSession>,
    /// Memory while the depth rows ran: the weights and one sequence's cache.
    pub memory: Footprint,
    /// Whether the weights lie on huge pages.
    pub pages: Pages,
    /// Memory while the engine took the cold and warm turns, when measured apart.
    pub ttft_memory: Option<Footprint>,
    /// Size of the model file.
    pub file_bytes: u64,
    pub kv_bytes_per_token: u64,
    /// The best read bandwidth measured beside the rows' decoding.
    pub bandwidth_bytes_s: f64,
    pub weight_bytes_per_token: usize,
}

impl BenchReport {
    /// Decode tokens/s the memory bandwidth allows for the weights alone (depth 0).
    pub fn bound_tok_s(&self) -> f64 {
        self.bound_at(0)
    }

    /// Decode tokens/s the memory bandwidth allows at `depth`: each token reads every weight
    /// and, in attention, the keys and values of the `depth` tokens before it (100 MB at 4k
    /// for Qwen2.5-0.5B, a quarter of its Q4_K_M weights).
    pub fn bound_at(&self, depth: usize) -> f64 {
        self.bound_with(depth, self.bandwidth_bytes_s)
    }

    /// [`bound_at`](Self::bound_at) for a bandwidth of `bytes_s`.
    fn bound_with(&self, depth: usize, bytes_s: f64) -> f64 {
        let bytes =
            self.weight_bytes_per_token as f64 + (self.kv_bytes_per_token * depth as u64) as f64;
        bytes_s / bytes.max(1.0)
    }

    /// How far `memory`'s peak went past the file plus the keys and values of its longest
    /// context, as a fraction (0.1 is 10% more).
    pub fn overhead(&self, memory: &Footprint) -> Option<f64> {
        let floor = self.file_bytes + self.kv_bytes_per_token * memory.kv_tokens as u64;
        memory
            .peak_rss_bytes
            .map(|peak| peak as f64 / floor.max(1) as f64 - 1.0)
    }

    fn write_memory(&self, f: &mut fmt::Formatter<'_>, label: &str, m: &Footprint) -> fmt::Result {
        let mib = |b: u64| b as f64 / (1 << 20) as f64;
        match (m.peak_rss_bytes, self.overhead(m)) {
            (Some(peak), Some(over)) => writeln!(
                f,
                "{label:<10} {:.0} MiB = file {:.0} MiB + KV {:.0} MiB ({} tokens) {:+.0}%",
                mib(peak),
                mib(self.file_bytes),
                mib(self.kv_bytes_per_token * m.kv_tokens as u64),
                m.kv_tokens,
                over * 100.0
            ),
            _ => writeln!(f, "{label:<10} unknown"),
        }
    }
}

/// Whether the weights lie on 2 MiB pages, which decoding reads faster than 4 KiB ones (see
/// `hearth_kernels::WeightArena`).
#[derive(Debug, Clone, PartialEq)]
pub struct Pages {
    /// The bytes of huge pages the model's load added.
    pub huge_weight_bytes: Option<u64>,
    /// The system's transparent huge page setting (`always`, `madvise` or `never`).
    pub setting: Option<String>,
}

impl fmt::Display for Pages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.huge_weight_bytes, self.setting.as_deref()) {
            (_, Some("never")) => write!(
                f,
                "4 KiB only: transparent huge pages are off (`never`), which slows decoding; \
                 `madvise` gives the weights 2 MiB pages"
            ),
            (Some(bytes), setting) => write!(
                f,
                "{:.0} MiB of weights on 2 MiB pages (transparent huge pages: {})",
                bytes as f64 / (1 << 20) as f64,
                setting.unwrap_or("unknown")
            ),
            (None, _) => write!(f, "unknown"),
        }
    }
}

/// The peak memory of one phase of the bench, and the longest context it held.
#[derive(Debug, Clone, PartialEq)]
pub struct Footprint {
    pub peak_rss_bytes: Option<u64>,
    pub kv_tokens: usize,
}

impl fmt::Display for BenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "model      {}", self.model.display())?;
        writeln!(f, "quant      {}", self.quantization)?;
        writeln!(f, "device     {}", self.device)?;
        let kernels: Vec<String> = self
            .kernels
            .iter()
            .map(|(kernel, n)| format!("{kernel} x{n}"))
            .collect();
        writeln!(f, "kernels    {}", kernels.join(", "))?;
        if let Some(requests) = self.weight_requests {
            writeln!(f, "requests   {}", requests.describe())?;
        }
        writeln!(f, "load       {:.2} s", self.load.as_secs_f64())?;
        writeln!(f, "pages      {}", self.pages)?;
        writeln!(f, "depth  prefill tok/s  decode tok/s  of bound (GB/s)")?;
        for r in &self.rows {
            writeln!(
                f,
                "{:>5}  {:>13.1}  {:>12.1}  {:>7.0}% ({:.1})",
                r.depth,
                r.prefill_tok_s,
                r.decode_tok_s,
                100.0 * r.decode_tok_s / self.bound_with(r.depth, r.bandwidth_bytes_s),
                r.bandwidth_bytes_s / 1e9
            )?;
        }
        self.write_memory(f, "peak rss", &self.memory)?;
        if let Some((cold, warm)) = self.ttft {
            let (cold, warm) = (cold.as_secs_f64(), warm.as_secs_f64());
            writeln!(
                f,
                "ttft       cold {cold:.2} s, warm {warm:.3} s ({:.0}x)",
                cold / warm.max(1e-9)
            )?;
        }
        if let Some(memory) = &self.ttft_memory {
            self.write_memory(f, "  its rss", memory)?;
        }
        if let Some(n) = &self.new_session {
            let (cold, disk) = (n.cold.as_secs_f64(), n.from_disk.as_secs_f64());
            writeln!(
                f,
                "session    new, system turn of {} tokens: read {cold:.2} s, from disk {disk:.3} s \
                 ({:.0}x, {} tokens reused)",
                n.system_tokens,
                cold / disk.max(1e-9),
                n.reused
            )?;
        }
        writeln!(
            f,
            "bound      {:.1} GB/s / {:.0} MB of weights per token = {:.1} tok/s at depth 0",
            self.bandwidth_bytes_s / 1e9,
            self.weight_bytes_per_token as f64 / 1e6,
            self.bound_tok_s()
        )
    }
}

/// Runs the benchmark. Takes minutes on a small CPU at the default depths.
pub fn run_bench(config: &BenchConfig) -> Result<BenchReport, EngineError> {
    let device = crate::device::open(crate::device::DeviceChoice::Auto)?;
    // Allocated first and resident throughout, so the peak memory below is the probe's
    // size more than the engine's own, exactly (subtracted there).
    let probe = BandwidthProbe::new();
    let mut file = GgufFile::open(&config.model_path)?;
    let max_depth = config.depths.iter().copied().max().unwrap_or(0);
    let need = max_depth + config.prefill_tokens + config.decode_tokens + 1;
    let conversation = config.conversation_tokens + config.turn_tokens;
    // The tokenizer is the bench's own (the engine measured for time to first token loads
    // one of its own): made and dropped before the weights, so the peak memory measured is
    // what the engine holds.
    let tokenizer = TextTokenizer::from_gguf(&file.content)?;
    let text = filler_tokens(&tokenizer, need.max(conversation))?;
    let sessions = config
        .ttft
        .then(|| session_prompts(&tokenizer, &text))
        .transpose()?;
    drop(tokenizer);
    let huge_before = huge_page_bytes();
    let start = Instant::now();
    let model = file.load_model_with(&device, config.kernels, &mut |_| Ok(()))?;
    let load = start.elapsed();
    let pages = Pages {
        huge_weight_bytes: huge_page_bytes()
            .zip(huge_before)
            .map(|(after, before)| after.saturating_sub(before)),
        setting: huge_page_setting(),
    };
    drop(file);
    // Inside a pool of its own, as the engine runs the model (see `engine::handle`): called
    // from outside one, every parallel op would wait on rayon's global pool, and decode would
    // measure 15–20% slower than the engine actually runs.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(candle_core::utils::get_num_threads())
        .build()
        .map_err(|e| EngineError::EngineGone(format!("cannot start the bench's threads: {e}")))?;
    let mut rows = Vec::new();
    for &depth in &config.depths {
        rows.push(pool.install(|| measure_depth(&model, &text, depth, config, &probe))?);
    }
    let quantization = model.quantization().to_string();
    let kernels = model.kernels();
    let kv_per_token = model.kv_bytes_per_token() as u64;
    let weight_bytes_per_token = model.weight_bytes_per_token();
    drop(model);
    let memory = Footprint {
        peak_rss_bytes: peak_rss().map(|peak| peak.saturating_sub(probe.bytes() as u64)),
        kv_tokens: max_depth + config.prefill_tokens.max(config.decode_tokens),
    };
    let bandwidth_bytes_s = match rows.iter().map(|r| r.bandwidth_bytes_s).reduce(f64::max) {
        Some(best) => best,
        None => probe.measure(candle_core::utils::get_num_threads()),
    };
    drop(probe);
    // The engine loads the model again: what the bench's copy left on the heap goes back
    // first, and the peak starts over, so the engine's own is read.
    release_freed();
    let apart = reset_peak_rss();
    let ttft = match config.ttft {
        true => Some(measure_ttft(config, &text)?),
        false => None,
    };
    let ttft_memory = (config.ttft && apart).then(|| Footprint {
        peak_rss_bytes: peak_rss(),
        kv_tokens: conversation,
    });
    let new_session = match &sessions {
        Some(sessions) => Some(measure_new_session(config, sessions)?),
        None => None,
    };
    let weight_requests = (!kernels.is_empty()).then(hearth_kernels::WeightRequests::here);
    Ok(BenchReport {
        model: config.model_path.clone(),
        quantization,
        kernels,
        weight_requests,
        device: crate::device::describe(&device),
        threads: candle_core::utils::get_num_threads(),
        load,
        rows,
        ttft,
        new_session,
        memory,
        pages,
        ttft_memory,
        file_bytes: std::fs::metadata(&config.model_path)?.len(),
        kv_bytes_per_token: kv_per_token,
        bandwidth_bytes_s,
        weight_bytes_per_token,
    })
}

/// Realistic token ids: a code snippet tokenized and repeated to `n` tokens.
fn filler_tokens(tokenizer: &TextTokenizer, n: usize) -> Result<Vec<u32>, EngineError> {
    const SNIPPET: &str = "fn parse_line(line: &str) -> Option<(String, i64)> {\n    \
        let (key, value) = line.split_once('=')?;\n    let value = value.trim().parse().ok()?;\n    \
        Some((key.trim().to_string(), value))\n}\n// Reads a config file and sums the values.\n";
    let unit = tokenizer.encode(SNIPPET)?;
    Ok(unit.iter().copied().cycle().take(n).collect())
}

fn prefill(model: &Model, cache: &mut KvCache, tokens: &[u32]) -> Result<Vec<f32>, EngineError> {
    // As the engine reads a prompt: only the last chunk's logits (`Model::prefill`).
    let chunks: Vec<&[u32]> = tokens.chunks(256).collect();
    let Some((last, rest)) = chunks.split_last() else {
        return Ok(Vec::new());
    };
    for chunk in rest {
        model.prefill(chunk, cache)?;
    }
    Ok(model.forward(last, cache)?.to_vec1::<f32>()?)
}

/// Timed decodes per depth row.
const DECODE_ROUNDS: usize = 3;

/// Prefill and decode speed at `depth`, measured as llama-bench measures `pp @ d` and `tg @ d`:
/// each starts from a context of exactly `depth` tokens. (Decoding after the timed prefill
/// instead would measure it `prefill_tokens` deeper.)
fn measure_depth(
    model: &Model,
    text: &[u32],
    depth: usize,
    config: &BenchConfig,
    probe: &BandwidthProbe,
) -> Result<DepthRow, EngineError> {
    let mut cache = model.new_cache();
    // As the engine does: room for the context and what follows it, made once.
    cache.reserve(depth + config.prefill_tokens.max(config.decode_tokens))?;
    prefill(model, &mut cache, &text[..depth])?;
    // The best of a few rounds, the bandwidth measured before and after each: decode and its
    // bound are then taken in the same minute, each at its best.
    // The pool this runs in decodes: the probe reads on as many threads.
    let threads = rayon::current_num_threads();
    let mut bandwidth_bytes_s = probe.measure(threads);
    let mut decode_tok_s = 0f64;
    for _ in 0..DECODE_ROUNDS {
        let t = Instant::now();
        let mut token = text[depth];
        for _ in 0..config.decode_tokens {
            let logits = model.forward(&[token], &mut cache)?.to_vec1::<f32>()?;
            token = argmax(&logits);
        }
        decode_tok_s = decode_tok_s.max(config.decode_tokens as f64 / t.elapsed().as_secs_f64());
        cache.truncate(depth)?;
        bandwidth_bytes_s = bandwidth_bytes_s.max(probe.measure(threads));
    }
    let timed = &text[depth..depth + config.prefill_tokens];
    let t = Instant::now();
    prefill(model, &mut cache, timed)?;
    let prefill_tok_s = timed.len() as f64 / t.elapsed().as_secs_f64();
    Ok(DepthRow {
        depth,
        prefill_tok_s,
        decode_tok_s,
        bandwidth_bytes_s,
    })
}

/// Cold and warm time to first token through the engine: a conversation read from scratch,
/// then the same conversation plus a new turn continuing from the cached prefix.
fn measure_ttft(config: &BenchConfig, text: &[u32]) -> Result<(Duration, Duration), EngineError> {
    let mut engine_config = EngineConfig::new(&config.model_path);
    engine_config.cache_budget_bytes = usize::MAX;
    let engine = Engine::spawn(engine_config)?;
    if let Health::Failed { reason } = engine.wait_ready(Duration::from_secs(600)) {
        return Err(EngineError::Failed(reason));
    }
    let conv = &text[..config.conversation_tokens];
    let (cold, _) = first_token_time(&engine, conv)?;
    let turn = &text[..config.conversation_tokens + config.turn_tokens];
    let (warm, _) = first_token_time(&engine, turn)?;
    Ok((cold, warm))
}

/// Two sessions' first prompts in ChatML: the same system turn of [`SESSION_SYSTEM_TOKENS`]
/// of `text`, then different questions; and the system turn's length.
fn session_prompts(
    tokenizer: &TextTokenizer,
    text: &[u32],
) -> Result<([Vec<u32>; 2], usize), EngineError> {
    let mut system = tokenizer.encode("<|im_start|>system\n")?;
    system.extend_from_slice(&text[..SESSION_SYSTEM_TOKENS.min(text.len())]);
    system.extend(tokenizer.encode("<|im_end|>")?);
    let ask = |question: &str| -> Result<Vec<u32>, EngineError> {
        let turn = format!("\n<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n");
        Ok([system.clone(), tokenizer.encode(&turn)?].concat())
    };
    let prompts = [
        ask("What does parse_line return for a line without '='?")?,
        ask("Rename parse_line to parse_entry.")?,
    ];
    Ok((prompts, system.len()))
}

/// A first session's time to first token, read cold, and a second one's in an engine of its
/// own (as a new `hearth run` is) that reads the system turn the first saved.
fn measure_new_session(
    config: &BenchConfig,
    (prompts, system_tokens): &([Vec<u32>; 2], usize),
) -> Result<NewSession, EngineError> {
    let dir = tempfile::tempdir()?;
    let session = |prompt: &[u32]| -> Result<(Duration, Option<u32>), EngineError> {
        let mut engine_config = EngineConfig::new(&config.model_path);
        engine_config.prefix_dir = Some(dir.path().to_path_buf());
        let engine = Engine::spawn(engine_config)?;
        if let Health::Failed { reason } = engine.wait_ready(Duration::from_secs(600)) {
            return Err(EngineError::Failed(reason));
        }
        first_token_time(&engine, prompt)
    };
    let (cold, _) = session(&prompts[0])?;
    let (from_disk, reused) = session(&prompts[1])?;
    Ok(NewSession {
        system_tokens: *system_tokens,
        cold,
        from_disk,
        reused: reused.unwrap_or(0) as usize,
    })
}

/// Time to the first token of `prompt`, and the prompt tokens the engine did not read.
fn first_token_time(
    engine: &Engine,
    prompt: &[u32],
) -> Result<(Duration, Option<u32>), EngineError> {
    let mut req = GenerateRequest::new(Prompt::Tokens(prompt.to_vec()), SamplingParams::greedy());
    req.max_tokens = Some(1);
    let t = Instant::now();
    let mut rx = engine.submit(req);
    let mut ttft = None;
    let mut reused = None;
    while let Some(ev) = rx.blocking_recv() {
        match ev {
            EngineEvent::Usage(usage) => {
                ttft.get_or_insert_with(|| t.elapsed());
                reused = usage.cached_tokens;
            }
            EngineEvent::Text(_) => {
                ttft.get_or_insert_with(|| t.elapsed());
            }
            EngineEvent::Failed { error, .. } => return Err(error),
            _ => {}
        }
    }
    Ok((ttft.unwrap_or_else(|| t.elapsed()), reused))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::{BenchReport, DepthRow, Footprint, NewSession, Pages};

    /// 20 GB/s over 400 MB of weights and 25 kB of keys and values per token of context.
    fn report(rows: Vec<DepthRow>) -> BenchReport {
        BenchReport {
            model: PathBuf::from("m.gguf"),
            quantization: "Q4_K_M".into(),
            kernels: vec![],
            weight_requests: None,
            device: "cpu (2 threads)".into(),
            threads: 2,
            load: Duration::from_secs(1),
            rows,
            ttft: None,
            new_session: None,
            memory: Footprint {
                peak_rss_bytes: None,
                kv_tokens: 0,
            },
            pages: Pages {
                huge_weight_bytes: Some(390 << 20),
                setting: Some("madvise".into()),
            },
            ttft_memory: None,
            file_bytes: 400_000_000,
            kv_bytes_per_token: 25_000,
            bandwidth_bytes_s: 20e9,
            weight_bytes_per_token: 400_000_000,
        }
    }

    #[test]
    fn the_bound_at_a_depth_counts_the_keys_and_values_read_there() {
        let report = report(vec![]);
        assert_eq!(report.bound_at(0), 50.0);
        assert_eq!(report.bound_at(0), report.bound_tok_s());
        // 4000 tokens of 25 kB: 100 MB more read per token.
        assert_eq!(report.bound_at(4000), 40.0);
    }

    /// Each row is set against the bandwidth measured beside it, not the report's best.
    #[test]
    fn each_depth_row_says_what_share_of_its_bound_decode_reached() {
        let row = |depth, decode_tok_s, bandwidth_bytes_s| DepthRow {
            depth,
            prefill_tok_s: 300.0,
            decode_tok_s,
            bandwidth_bytes_s,
        };
        // 45 of 20 GB/s / 400 MB; 20 of 10 GB/s / 500 MB (400 MB of weights, 100 of KV).
        let rows = vec![row(0, 45.0, 20e9), row(4000, 20.0, 10e9)];
        let text = report(rows).to_string();
        let lines: Vec<&str> = text.lines().collect();
        let share = |depth: &str| {
            let line = lines
                .iter()
                .find(|l| l.split_whitespace().next() == Some(depth))
                .unwrap_or_else(|| panic!("no row for depth {depth} in:\n{text}"));
            let words: Vec<&str> = line.split_whitespace().collect();
            (words[3].to_string(), words[4].to_string())
        };
        assert_eq!(share("0"), ("90%".into(), "(20.0)".into()));
        assert_eq!(share("4000"), ("100%".into(), "(10.0)".into()));
        assert!(text.contains("= 50.0 tok/s at depth 0"), "{text}");
    }

    /// The report names the kernels' weight requests where packed kernels ran, and only there.
    #[test]
    fn the_report_names_the_weight_requests_where_packed_kernels_ran() {
        let mut report = report(vec![]);
        assert!(!report.to_string().contains("requests "), "{report}");
        report.weight_requests = Some(hearth_kernels::WeightRequests::IntoL2);
        let text = report.to_string();
        let line = text.lines().find(|l| l.starts_with("requests "));
        assert_eq!(line, Some("requests   into L2 (every kernel)"), "{text}");
    }

    /// The report says how much of the weights lie on huge pages, and, where the system has
    /// them off, that this slows decoding and what to set.
    #[test]
    fn the_report_says_whether_the_weights_are_on_huge_pages() {
        let mut report = report(vec![]);
        let pages = |r: &BenchReport| {
            let text = r.to_string();
            let line = text.lines().find(|l| l.starts_with("pages "));
            line.map(|l| l["pages ".len()..].trim().to_string())
        };
        assert_eq!(
            pages(&report).as_deref(),
            Some("390 MiB of weights on 2 MiB pages (transparent huge pages: madvise)")
        );
        report.pages.setting = Some("never".into());
        let off = pages(&report).unwrap_or_default();
        assert!(
            off.contains("off (`never`)") && off.contains("`madvise`"),
            "{off}"
        );
        report.pages = Pages {
            huge_weight_bytes: None,
            setting: None,
        };
        assert_eq!(pages(&report).as_deref(), Some("unknown"));
    }

    #[test]
    fn the_report_says_how_soon_a_new_session_answers_from_disk() {
        let mut report = report(vec![]);
        assert!(!report.to_string().contains("session"));
        report.new_session = Some(NewSession {
            system_tokens: 1403,
            cold: Duration::from_millis(7350),
            from_disk: Duration::from_millis(294),
            reused: 1403,
        });
        let text = report.to_string();
        assert!(
            text.lines().any(|l| l
                == "session    new, system turn of 1403 tokens: \
                 read 7.35 s, from disk 0.294 s (25x, 1403 tokens reused)"),
            "{text}"
        );
    }
}

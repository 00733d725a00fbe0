//! Decode speed at one depth: `decode MODEL.gguf [DEPTH] [TOKENS] [greedy|default]`. Prints
//! how fast the prompt of `DEPTH` tokens was read (chunks of 256, outside the engine's pool),
//! then tokens/s for the forward pass alone and with the logits copied out and a token picked
//! from them, as the engine does: greedily (the default here), or with the engine's default
//! sampling (temperature 0.7, top-k 20, top-p 0.8, repeat penalty).

use std::time::{Duration, Instant};

use candle_core::Device;
use hearth_local::GgufFile;
use hearth_local::sampler::{Sampler, SamplingParams};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: decode MODEL.gguf [DEPTH] [TOKENS] [SAMPLING]"))?;
    let depth: usize = args.next().map_or(Ok(0), |s| s.parse())?;
    let tokens: usize = args.next().map_or(Ok(64), |s| s.parse())?;
    let (sampling, params) = match args.next().as_deref() {
        None | Some("greedy") => ("greedy", SamplingParams::greedy()),
        Some("default") => ("default sampling", SamplingParams::default()),
        Some(other) => anyhow::bail!("sampling {other:?}: greedy or default"),
    };
    let mut sampler = Sampler::new(params);
    let model = GgufFile::open(path.as_ref())?.load_model(&Device::Cpu, &mut |_| Ok(()))?;
    let mut cache = model.new_cache();
    let prompt: Vec<u32> = (0..depth.max(1) as u32).map(|i| 100 + i % 5000).collect();
    let start = Instant::now();
    for chunk in prompt.chunks(256) {
        model.forward(chunk, &mut cache)?;
    }
    let prefill = start.elapsed().as_secs_f64();
    eprintln!(
        "prefilled {depth} tokens in {prefill:.2} s ({:.0} tok/s); decoding {tokens}",
        prompt.len() as f64 / prefill
    );
    let (mut forward, mut readout) = (Duration::ZERO, Duration::ZERO);
    let cpu_start = cpu_seconds();
    let mut token = 100u32;
    let mut history = prompt.clone();
    // As the engine runs it: inside a pool of its own (see `engine::handle::start_thread`).
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(candle_core::utils::get_num_threads())
        .build()?;
    for _ in 0..tokens {
        let t = Instant::now();
        let logits = pool.install(|| model.forward(&[token], &mut cache))?;
        forward += t.elapsed();
        let t = Instant::now();
        token = sampler.sample(&mut logits.to_vec1::<f32>()?, &history)?;
        readout += t.elapsed();
        history.push(token);
    }
    let n = tokens as f64;
    let cpu = cpu_seconds() - cpu_start;
    println!(
        "depth {depth}: {:.1} tok/s ({:.2} ms forward, {:.3} ms logits+{sampling}, {:.1} ms \
         CPU per token), threads {}",
        n / (forward + readout).as_secs_f64(),
        forward.as_secs_f64() * 1e3 / n,
        readout.as_secs_f64() * 1e3 / n,
        cpu * 1e3 / n,
        candle_core::utils::get_num_threads()
    );
    Ok(())
}

/// User plus system CPU time of this process (Linux; 0 elsewhere). On a shared machine CPU
/// time per token is steadier than wall time.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the parenthesised command name; utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|v| v.parse().ok())
        .collect();
    f.iter().sum::<f64>() / 100.0
}

//! Greedy tokens on the CPU against CUDA device 0: `device_compare MODEL.gguf [N]`. Exits
//! non-zero when they differ. Needs a build with the `cuda` feature and a GPU.

use std::time::Instant;

use hearth_local::device::{DeviceChoice, open};
use hearth_local::{GgufFile, TextTokenizer, sampler::argmax};

fn greedy(path: &str, choice: DeviceChoice, prompt: &[u32], n: usize) -> anyhow::Result<Vec<u32>> {
    let device = open(choice)?;
    let mut file = GgufFile::open(path.as_ref())?;
    let model = file.load_model(&device, &mut |_| Ok(()))?;
    let mut cache = model.new_cache();
    let t = Instant::now();
    let mut logits = model.forward(prompt, &mut cache)?.to_vec1::<f32>()?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let token = argmax(&logits);
        out.push(token);
        logits = model.forward(&[token], &mut cache)?.to_vec1::<f32>()?;
    }
    let secs = t.elapsed().as_secs_f64();
    eprintln!(
        "{choice:?}: {n} tokens in {secs:.2} s ({:.1} tok/s)",
        n as f64 / secs
    );
    Ok(out)
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: device_compare MODEL.gguf [N]"))?;
    let n: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(64);
    let file = GgufFile::open(path.as_ref())?;
    let tokenizer = TextTokenizer::from_gguf(&file.content)?;
    let prompt = tokenizer.encode(
        "<|im_start|>user\nWrite a Rust function that sums a slice.<|im_end|>\n<|im_start|>assistant\n",
    )?;
    let cpu = greedy(&path, DeviceChoice::Cpu, &prompt, n)?;
    let gpu = greedy(&path, DeviceChoice::Cuda(0), &prompt, n)?;
    let same = cpu.iter().zip(&gpu).take_while(|(a, b)| a == b).count();
    println!("{same}/{n} greedy tokens agree");
    println!("cpu: {:?}", tokenizer.decode(&cpu)?);
    println!("gpu: {:?}", tokenizer.decode(&gpu)?);
    anyhow::ensure!(same == n, "CPU and CUDA diverge at token {same}");
    Ok(())
}

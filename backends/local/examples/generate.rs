//! Generates an answer with the local engine: `generate MODEL.gguf "prompt" [max_tokens]`.
//! Greedy decoding; prints the text to stdout and timing to stderr.

use std::io::Write;
use std::time::{Duration, Instant};

use hearth_backend::Message;
use hearth_local::{Engine, EngineConfig, EngineEvent, GenerateRequest, Prompt, SamplingParams};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: generate MODEL.gguf PROMPT [MAX]"))?;
    let prompt = args
        .next()
        .unwrap_or_else(|| "Write a Rust function that reverses a string.".into());
    let max: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(128);
    let engine = Engine::spawn(EngineConfig::new(path))?;
    let t0 = Instant::now();
    let health = engine.wait_ready(Duration::from_secs(120));
    eprintln!(
        "loaded in {:?}: {health:?} {:?}",
        t0.elapsed(),
        engine.summary()
    );
    let mut req = GenerateRequest::new(
        Prompt::Messages(vec![Message::user(prompt)]),
        SamplingParams::greedy(),
    );
    req.max_tokens = Some(max);
    let t1 = Instant::now();
    let mut rx = engine.submit(req);
    let mut first = None;
    while let Some(ev) = rx.blocking_recv() {
        match ev {
            EngineEvent::Text(t) => {
                first.get_or_insert_with(|| t1.elapsed());
                print!("{t}");
                std::io::stdout().flush()?;
            }
            EngineEvent::Usage(u) => eprintln!("\n{u:?}"),
            other => eprintln!("\n{other:?}"),
        }
    }
    eprintln!("ttft {first:?}, total {:?}", t1.elapsed());
    Ok(())
}

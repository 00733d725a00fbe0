//! Prints the engine benchmark for a GGUF: `bench MODEL.gguf [depth,depth,..]`.

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: bench MODEL.gguf [DEPTHS] [CONVERSATION]"))?;
    let mut config = hearth_local::bench::BenchConfig::new(path);
    if let Some(depths) = args.next() {
        config.depths = depths
            .split(',')
            .map(str::parse)
            .collect::<Result<_, _>>()?;
    }
    if let Some(conv) = args.next() {
        config.conversation_tokens = conv.parse()?;
    }
    let report = hearth_local::bench::run_bench(&config)?;
    print!("{report}");
    Ok(())
}

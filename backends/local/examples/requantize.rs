//! Re-quantizes a GGUF for faster CPU decoding: `requantize IN.gguf OUT.gguf q8_0|q4_0`.

use candle_core::quantized::GgmlDType;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [src, dst, kind] = args.as_slice() else {
        anyhow::bail!("usage: requantize IN.gguf OUT.gguf q8_0|q4_0");
    };
    let dtype = match kind.as_str() {
        "q8_0" => GgmlDType::Q8_0,
        "q4_0" => GgmlDType::Q4_0,
        other => anyhow::bail!("unknown type {other}"),
    };
    let t = std::time::Instant::now();
    hearth_local::requant::requantize(src.as_ref(), dst.as_ref(), dtype)?;
    eprintln!("wrote {dst} in {:?}", t.elapsed());
    Ok(())
}

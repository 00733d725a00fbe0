//! hearth's greedy decoding against another engine's (llama.cpp's, from
//! `scripts/llama-agree.sh`) on the same file: `agree MODEL.gguf PROMPT_FILE OTHER_FILE`,
//! where OTHER_FILE holds the text the other engine generated greedily after the prompt.
//!
//! Prints where hearth's own greedy tokens first leave the other's, and the top-1 agreement:
//! with the other engine's tokens fed in one by one, the share of positions where hearth's
//! most likely next token is the one the other engine chose. The other engine's text is
//! tokenized again with the file's tokenizer, which gives back its tokens for ordinary text.

use hearth_local::device::{DeviceChoice, open};
use hearth_local::{GgufFile, TextTokenizer, sampler::argmax};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path, prompt, other] = args.as_slice() else {
        anyhow::bail!("usage: agree MODEL.gguf PROMPT_FILE OTHER_FILE");
    };
    let (prompt, other) = (
        std::fs::read_to_string(prompt)?,
        std::fs::read_to_string(other)?,
    );
    let device = open(DeviceChoice::Cpu)?;
    let mut file = GgufFile::open(path.as_ref())?;
    let model = file.load_model(&device, &mut |_| Ok(()))?;
    let tokenizer = TextTokenizer::from_gguf(&file.content)?;
    let prompt = tokenizer.encode(&prompt)?;
    let theirs = tokenizer.encode(&other)?;
    anyhow::ensure!(!theirs.is_empty(), "the other engine generated nothing");
    let n = theirs.len();

    // hearth's own greedy continuation.
    let mut cache = model.new_cache();
    let mut logits = model.forward(&prompt, &mut cache)?.to_vec1::<f32>()?;
    let mut ours = Vec::with_capacity(n);
    for _ in 0..n {
        let token = argmax(&logits);
        ours.push(token);
        logits = model.forward(&[token], &mut cache)?.to_vec1::<f32>()?;
    }
    let same = ours.iter().zip(&theirs).take_while(|(a, b)| a == b).count();

    // The other engine's tokens fed in: does hearth pick each next one?
    let mut cache = model.new_cache();
    let mut logits = model.forward(&prompt, &mut cache)?.to_vec1::<f32>()?;
    let mut agree = 0;
    for &token in &theirs {
        agree += usize::from(argmax(&logits) == token);
        logits = model.forward(&[token], &mut cache)?.to_vec1::<f32>()?;
    }

    println!("quant          {}", model.quantization());
    println!("kernels        {:?}", model.kernels());
    match same {
        s if s == n => println!("first diverge  none in {n} tokens"),
        s => println!(
            "first diverge  token {s} of {n}: hearth {:?}, other {:?}",
            tokenizer.decode(&ours[s..=s])?,
            tokenizer.decode(&theirs[s..=s])?
        ),
    }
    println!(
        "top-1 agree    {agree}/{n} ({:.1}%)",
        100.0 * agree as f64 / n as f64
    );
    if same < n {
        println!("hearth: {:?}", tokenizer.decode(&ours)?);
        println!("other:  {:?}", tokenizer.decode(&theirs)?);
    }
    Ok(())
}

//! Prints the token ids of a text under a GGUF's tokenizer: `tokens MODEL.gguf TEXT`.

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path, text] = args.as_slice() else {
        anyhow::bail!("usage: tokens MODEL.gguf TEXT");
    };
    let file = hearth_local::GgufFile::open(path.as_ref())?;
    let tok = hearth_local::TextTokenizer::from_gguf(&file.content)?;
    let ids = tok.encode(text)?;
    println!("{ids:?}");
    for id in ids {
        println!("{id}\t{:?}", tok.decode(&[id])?);
    }
    Ok(())
}

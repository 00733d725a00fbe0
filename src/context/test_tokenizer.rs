//! A real Qwen tokenizer for the tests, when one is on this machine: `tokenizer.json` if
//! present, else rebuilt from the vocabulary and merges inside a Qwen2 GGUF file. Nothing is
//! downloaded; without either file the tests that need it say so and pass.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;
use std::str::FromStr;

use serde_json::{Value, json};

use super::tokens::TokenizerCounter;

const MODELS: &str = "/work/.models";

/// Qwen2's pre-tokenizer split, as its `tokenizer.json` states it.
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// The Qwen tokenizer found on this machine, or `None` with a note on stdout. Loaded once
/// per test binary (rebuilding it from a GGUF takes seconds in a debug build).
pub fn qwen_counter() -> Option<&'static TokenizerCounter> {
    static QWEN: std::sync::OnceLock<Option<TokenizerCounter>> = std::sync::OnceLock::new();
    QWEN.get_or_init(load).as_ref()
}

fn load() -> Option<TokenizerCounter> {
    let json = Path::new(MODELS).join("tokenizer.json");
    if json.exists() {
        return TokenizerCounter::from_file(&json).ok();
    }
    let gguf = std::fs::read_dir(MODELS)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.extension().is_some_and(|e| e == "gguf") && p.to_string_lossy().contains("qwen")
        });
    let Some(gguf) = gguf else {
        println!(
            "skipped: no tokenizer.json or Qwen GGUF under {MODELS} (tests never download one)"
        );
        return None;
    };
    let (tokens, types, merges) = read_vocab(&gguf).ok()?;
    let text = tokenizer_json(&tokens, &types, &merges).to_string();
    let tokenizer = tokenizers::Tokenizer::from_str(&text).ok()?;
    println!("using the tokenizer inside {}", gguf.display());
    Some(TokenizerCounter::new(tokenizer))
}

fn tokenizer_json(tokens: &[String], types: &[u32], merges: &[String]) -> Value {
    let vocab: serde_json::Map<String, Value> = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (t.clone(), json!(i)))
        .collect();
    // Control tokens (type 3) are the special tokens such as `<|im_start|>`.
    let added: Vec<Value> = tokens
        .iter()
        .zip(types)
        .enumerate()
        .filter(|(_, (_, ty))| **ty == 3)
        .map(|(i, (t, _))| {
            json!({"id": i, "content": t, "single_word": false, "lstrip": false,
                   "rstrip": false, "normalized": false, "special": true})
        })
        .collect();
    json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN2_SPLIT}, "behavior": "Isolated", "invert": false},
            {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}
        ]},
        "post_processor": null,
        "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
        "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
                  "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false,
                  "vocab": vocab, "merges": merges}
    })
}

type Vocab = (Vec<String>, Vec<u32>, Vec<String>);

/// Reads `tokenizer.ggml.{tokens,token_type,merges}` from a GGUF header.
fn read_vocab(path: &Path) -> std::io::Result<Vocab> {
    let mut r = BufReader::new(File::open(path)?);
    let mut magic = [0u8; 4];
    r.read_exact(&mut magic)?;
    let bad = || std::io::Error::other("not a GGUF v2/v3 file");
    if &magic != b"GGUF" {
        return Err(bad());
    }
    let _version = u32_(&mut r)?;
    let _tensors = u64_(&mut r)?;
    let kvs = u64_(&mut r)?;
    let (mut tokens, mut types, mut merges) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..kvs {
        let key = string(&mut r)?;
        let ty = u32_(&mut r)?;
        match key.as_str() {
            "tokenizer.ggml.tokens" => tokens = strings(&mut r)?,
            "tokenizer.ggml.merges" => merges = strings(&mut r)?,
            "tokenizer.ggml.token_type" => {
                let (_, n) = (u32_(&mut r)?, u64_(&mut r)?);
                types = (0..n).map(|_| u32_(&mut r)).collect::<Result<_, _>>()?;
            }
            _ => skip(&mut r, ty)?,
        }
        if !tokens.is_empty() && !merges.is_empty() && !types.is_empty() {
            return Ok((tokens, types, merges));
        }
    }
    Err(bad())
}

fn u32_(r: &mut impl Read) -> std::io::Result<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_le_bytes(b))
}

fn u64_(r: &mut impl Read) -> std::io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

fn string(r: &mut impl Read) -> std::io::Result<String> {
    let n = u64_(r)? as usize;
    let mut b = vec![0u8; n];
    r.read_exact(&mut b)?;
    Ok(String::from_utf8_lossy(&b).into_owned())
}

fn strings(r: &mut impl Read) -> std::io::Result<Vec<String>> {
    let _ty = u32_(r)?;
    let n = u64_(r)?;
    (0..n).map(|_| string(r)).collect()
}

fn skip(r: &mut impl Read, ty: u32) -> std::io::Result<()> {
    let size = match ty {
        0 | 1 | 7 => 1,
        2 | 3 => 2,
        4..=6 => 4,
        10..=12 => 8,
        8 => return string(r).map(drop),
        9 => {
            let inner = u32_(r)?;
            let n = u64_(r)?;
            for _ in 0..n {
                skip(r, inner)?;
            }
            return Ok(());
        }
        _ => return Err(std::io::Error::other("unknown GGUF value type")),
    };
    std::io::copy(&mut r.take(size), &mut std::io::sink()).map(drop)
}

#[test]
fn the_rebuilt_tokenizer_counts_like_qwen() {
    let Some(counter) = qwen_counter() else {
        return;
    };
    use super::tokens::TokenCounter;
    // Known Qwen2 counts: special tokens are single tokens, common words merge.
    assert_eq!(counter.count("<|im_start|>user\nhello<|im_end|>"), 5);
    assert_eq!(counter.count("Hello world"), 2);
    assert!(counter.count("fn main() {}") <= 5);
}

#[test]
fn the_uncalibrated_estimate_is_not_below_qwen() {
    let Some(qwen) = qwen_counter() else {
        return;
    };
    use super::estimator::CalibratedEstimator;
    use super::tokens::TokenCounter;
    let estimate = CalibratedEstimator::default();
    let samples = [
        super::test_support::code(200, 7),
        "The quick brown fox jumps over the lazy dog. ".repeat(50),
        r#"{"id": 12345, "items": [1, 2, 3], "name": "widget-2000"}"#.repeat(40),
        "fn parse(input: &str) -> Result<Vec<Token>, Error> {\n    todo!()\n}\n".repeat(60),
        "上下文窗口必须适合。".repeat(30),
        "error[E0599]: no method named `foo` found for struct `Bar` in src/lib.rs:42:7\n"
            .repeat(40),
    ];
    for text in &samples {
        let (e, q) = (estimate.count(text), qwen.count(text));
        assert!(
            e >= q,
            "estimate {e} below Qwen's {q} for {:?}",
            &text[..40]
        );
    }
}

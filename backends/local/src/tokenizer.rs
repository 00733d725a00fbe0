//! The model's tokenizer, from GGUF metadata or a `tokenizer.json`, with the ids the engine
//! stops on and a UTF-8-safe streaming decoder.

use std::path::Path;

use candle_core::quantized::gguf_file::{Content, Value};
use candle_core::quantized::tokenizer::TokenizerFromGguf;
use tokenizers::{
    DecoderWrapper, ModelWrapper, NormalizerWrapper, PostProcessorWrapper, PreTokenizerWrapper,
    Tokenizer,
};

use crate::error::EngineError;

/// Qwen2.5's chat template adds this system prompt when the conversation has none.
const QWEN25_DEFAULT_SYSTEM: &str =
    "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

/// End-of-turn markers across the supported families.
const EOS_TOKENS: &[&str] = &["<|im_end|>", "<|endoftext|>", "<|end_of_text|>", "</s>"];

/// A tokenizer plus what the engine needs to know about its special tokens.
pub struct TextTokenizer {
    pub(crate) inner: Tokenizer,
    eos: Vec<u32>,
    default_system: Option<String>,
}

type Stream<'a> = tokenizers::DecodeStream<
    'a,
    ModelWrapper,
    NormalizerWrapper,
    PreTokenizerWrapper,
    PostProcessorWrapper,
    DecoderWrapper,
>;

impl TextTokenizer {
    /// Builds the tokenizer stored in a GGUF's metadata (BPE `gpt2` models only).
    pub fn from_gguf(content: &Content) -> Result<Self, EngineError> {
        let inner = Tokenizer::from_gguf(content).map_err(|e| EngineError::Load {
            path: "GGUF tokenizer".into(),
            message: e.to_string(),
        })?;
        let mut eos = Vec::new();
        if let Some(Value::U32(id)) = content.metadata.get("tokenizer.ggml.eos_token_id") {
            eos.push(*id);
        }
        let template = match content.metadata.get("tokenizer.chat_template") {
            Some(Value::String(t)) => t.as_str(),
            _ => "",
        };
        let default_system = template
            .contains(QWEN25_DEFAULT_SYSTEM)
            .then(|| QWEN25_DEFAULT_SYSTEM.to_string());
        Ok(Self::with_eos(inner, eos, default_system))
    }

    /// Loads a `tokenizer.json`.
    pub fn from_file(path: &Path) -> Result<Self, EngineError> {
        let inner = Tokenizer::from_file(path).map_err(|e| EngineError::Load {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Ok(Self::with_eos(inner, Vec::new(), None))
    }

    /// Loads `dir/tokenizer.json`; `dir/tokenizer_config.json`, when present, supplies the
    /// chat template's default system prompt (Qwen2.5 has one).
    pub fn from_dir(dir: &Path) -> Result<Self, EngineError> {
        let mut tokenizer = Self::from_file(&dir.join("tokenizer.json"))?;
        let config = dir.join("tokenizer_config.json");
        if let Ok(text) = std::fs::read_to_string(&config) {
            let value: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| EngineError::Load {
                    path: config.display().to_string(),
                    message: e.to_string(),
                })?;
            let template = value["chat_template"].as_str().unwrap_or_default();
            tokenizer.default_system = template
                .contains(QWEN25_DEFAULT_SYSTEM)
                .then(|| QWEN25_DEFAULT_SYSTEM.to_string());
        }
        Ok(tokenizer)
    }

    fn with_eos(inner: Tokenizer, mut eos: Vec<u32>, default_system: Option<String>) -> Self {
        for name in EOS_TOKENS {
            if let Some(id) = inner.token_to_id(name)
                && !eos.contains(&id)
            {
                eos.push(id);
            }
        }
        Self {
            inner,
            eos,
            default_system,
        }
    }

    /// Token ids of `text`. Special tokens written in the text (`<|im_start|>`) become their
    /// single special id; nothing else is added.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, EngineError> {
        let enc = self
            .inner
            .encode(text, false)
            .map_err(|e| EngineError::Tokenizer(e.to_string()))?;
        Ok(enc.get_ids().to_vec())
    }

    /// Text of `ids`, special tokens included.
    pub fn decode(&self, ids: &[u32]) -> Result<String, EngineError> {
        self.inner
            .decode(ids, false)
            .map_err(|e| EngineError::Tokenizer(e.to_string()))
    }

    /// Ids that end a generation.
    pub fn eos_ids(&self) -> &[u32] {
        &self.eos
    }

    /// The system prompt the model's own template adds when a conversation has none.
    pub fn default_system(&self) -> Option<&str> {
        self.default_system.as_deref()
    }

    /// A streaming decoder that emits text only once it is complete UTF-8.
    pub fn stream_decoder(&self) -> TokenDecoder<'_> {
        TokenDecoder {
            inner: self.inner.decode_stream(false),
        }
    }
}

/// Turns ids into text one at a time, holding back bytes of an incomplete UTF-8 sequence.
pub struct TokenDecoder<'a> {
    inner: Stream<'a>,
}

impl TokenDecoder<'_> {
    /// The text `id` completes, if any.
    pub fn step(&mut self, id: u32) -> Result<Option<String>, EngineError> {
        self.inner
            .step(id)
            .map_err(|e| EngineError::Tokenizer(e.to_string()))
    }
}

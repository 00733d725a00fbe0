//! A model on disk, in either format hearth reads: a GGUF file, or a Hugging Face directory
//! (`config.json` + `tokenizer.json` + `*.safetensors`). The engine asks this module for the
//! header (shape, tokenizer, format label) before loading and for the weights when loading.

use std::path::{Path, PathBuf};

use candle_core::Device;

use crate::error::EngineError;
use crate::model::{GgufFile, LoadStage, Model, ModelConfig, quantization_label, safetensors};
use crate::tokenizer::TextTokenizer;

/// Where a model's files are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelFiles {
    /// One GGUF file holding weights, shape and tokenizer.
    Gguf(PathBuf),
    /// A directory with `config.json`, `tokenizer.json` and safetensors weights.
    Safetensors(PathBuf),
}

/// What is known before the weights load.
pub struct ModelHeader {
    pub config: ModelConfig,
    pub tokenizer: TextTokenizer,
    /// The weight format, e.g. `Q8_0` or `BF16`.
    pub quantization: String,
}

impl ModelFiles {
    /// A directory is a safetensors checkpoint; anything else a GGUF file.
    pub fn at(path: &Path) -> Self {
        if path.is_dir() {
            Self::Safetensors(path.to_path_buf())
        } else {
            Self::Gguf(path.to_path_buf())
        }
    }

    pub fn path(&self) -> &Path {
        match self {
            Self::Gguf(p) | Self::Safetensors(p) => p,
        }
    }

    /// The id a model at `path` is listed under: a directory's name, a file's stem.
    pub fn default_id(path: &Path) -> String {
        let name = if path.is_dir() {
            path.file_name()
        } else {
            path.file_stem()
        };
        name.map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "local".into())
    }

    /// Reads shape, tokenizer and format label (fast: no weights).
    pub fn header(&self) -> Result<ModelHeader, EngineError> {
        match self {
            Self::Gguf(path) => {
                let file = GgufFile::open(path)?;
                let tokenizer = TextTokenizer::from_gguf(&file.content)?;
                let vocab = file
                    .content
                    .tensor_infos
                    .get("token_embd.weight")
                    .and_then(|t| t.shape.dims2().ok())
                    .map(|(v, _)| v)
                    .unwrap_or(0);
                Ok(ModelHeader {
                    config: ModelConfig::from_gguf(&file.content, vocab)?,
                    tokenizer,
                    quantization: quantization_label(&file.content),
                })
            }
            Self::Safetensors(dir) => {
                let (config, _) = safetensors::read_config(dir)?;
                let tokenizer = TextTokenizer::from_dir(dir)?;
                let files = safetensors::weight_files(dir)?;
                Ok(ModelHeader {
                    config,
                    tokenizer,
                    quantization: safetensors::stored_dtype(&files)?,
                })
            }
        }
    }

    /// Loads the weights onto `device`, calling `hook` after each stage. Transactional.
    pub fn load(
        &self,
        device: &Device,
        hook: &mut dyn FnMut(LoadStage) -> Result<(), EngineError>,
    ) -> Result<Model, EngineError> {
        match self {
            Self::Gguf(path) => GgufFile::open(path)?.load_model(device, hook),
            Self::Safetensors(dir) => safetensors::load(dir, device, hook),
        }
    }
}

//! An embedding table left in the GGUF file: each forward pass reads the rows of its tokens
//! with positional reads, from the page cache as a rule.
//!
//! A model whose output head is a tensor of its own (not tied to the embedding) uses its table
//! only as a lookup, one row per token; held in memory it was the largest thing that sat idle,
//! 89 MiB for the 0.5B's Q4_K_M download and 138 MiB for its Q8_0 copy (run without AVX2), a
//! fifth or more of the process. llama.cpp leaves it in its mapping of the file for the same
//! reason.
//!
//! The file stays open, so a download that replaces it (written beside it and renamed, as
//! `hearth model pull` does) does not change what is read. A file cut short under the running
//! engine is a [`EngineError::ModelFileRead`]: the model is reloaded, which checks the file
//! again. One rewritten in place, byte for byte, is not detected.

use std::fs::File;

use candle_core::quantized::GgmlDType;
use candle_core::quantized::ggml_file::qtensor_from_ggml;
use candle_core::{Device, Tensor};

use crate::error::EngineError;

pub(crate) struct DiskRows {
    file: File,
    path: String,
    /// Where the table's data starts in the file.
    offset: u64,
    rows: usize,
    cols: usize,
    dtype: GgmlDType,
    row_bytes: usize,
}

impl DiskRows {
    /// The `rows` × `cols` table of `dtype` at `offset` in `file`. `None` when its rows do not
    /// split into whole blocks of the format (GGUF requires that; a file that breaks it keeps
    /// its table in memory, where candle's reader judges it).
    pub fn new(
        file: File,
        path: &str,
        offset: u64,
        (rows, cols): (usize, usize),
        dtype: GgmlDType,
    ) -> Option<Self> {
        if cols == 0 || !cols.is_multiple_of(dtype.block_size()) {
            return None;
        }
        let row_bytes = cols / dtype.block_size() * dtype.type_size();
        Some(Self {
            file,
            path: path.to_string(),
            offset,
            rows,
            cols,
            dtype,
            row_bytes,
        })
    }

    /// Rows `ids` as a `(ids.len(), cols)` f32 tensor on `device`.
    pub fn rows(&self, ids: &[u32], device: &Device) -> Result<Tensor, EngineError> {
        let mut bytes = vec![0u8; ids.len() * self.row_bytes];
        for (&id, row) in ids.iter().zip(bytes.chunks_exact_mut(self.row_bytes)) {
            if id as usize >= self.rows {
                return Err(EngineError::TokenOutOfRange {
                    id,
                    vocab: self.rows,
                });
            }
            let at = self.offset + id as u64 * self.row_bytes as u64;
            read_at(&self.file, row, at).map_err(|e| EngineError::ModelFileRead {
                path: self.path.clone(),
                message: format!("the embedding row of token {id}: {e}"),
            })?;
        }
        let table =
            qtensor_from_ggml(self.dtype, &bytes, vec![ids.len(), self.cols], &Device::Cpu)?;
        Ok(table.dequantize(&Device::Cpu)?.to_device(device)?)
    }
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(windows)]
fn read_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        match std::os::windows::fs::FileExt::seek_read(file, buf, offset)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}

//! Checks on what a GGUF header declares, made before anything is sized or read from it.
//!
//! A model file is untrusted input: its header gives every tensor's shape, type and offset,
//! and candle's reader multiplies the dimensions without checking (`Shape::elem_count`), which
//! wraps in a release build to a small, plausible size, or panics in a debug one. So every
//! tensor's element count, byte size and extent are computed here with checked arithmetic and
//! held to the file's length first; the loader then holds each weight's shape to what the
//! model's config says it must be, so no later matmul, reshape or kernel sees sizes the config
//! does not vouch for.

use candle_core::quantized::gguf_file::{Content, TensorInfo};

/// A tensor the header declares in a way no well-formed file does. Each names the tensor.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GgufLayoutError {
    /// The product of the dimensions does not fit in `usize`.
    #[error("tensor `{tensor}`: the element count of shape {dims:?} overflows")]
    ElementsOverflow { tensor: String, dims: Vec<usize> },
    /// Quantized data comes in whole blocks; a count that is not a multiple of the block size
    /// has no byte size.
    #[error("tensor `{tensor}`: {elements} elements are not whole blocks of {block}")]
    PartialBlock {
        tensor: String,
        elements: usize,
        block: usize,
    },
    /// The byte size, or where the data would end, does not fit in 64 bits.
    #[error("tensor `{tensor}`: its data at offset {offset} overflows the file's address range")]
    ExtentOverflow { tensor: String, offset: u64 },
    /// The data would run past the end of the file.
    #[error(
        "tensor `{tensor}` needs {bytes} bytes at offset {start}, past the end of the {file_len}-byte file"
    )]
    PastEnd {
        tensor: String,
        start: u64,
        bytes: u64,
        file_len: u64,
    },
    /// A weight the model needs is not in the file.
    #[error("tensor `{tensor}` is missing")]
    Missing { tensor: String },
    /// A weight with a zero dimension: no model has one, and an empty matrix would turn every
    /// product through it into zeros rather than an error.
    #[error("tensor `{tensor}` has an empty dimension in {dims:?}")]
    Empty { tensor: String, dims: Vec<usize> },
    /// A weight whose shape disagrees with the model's config (hidden size, heads, vocab).
    #[error("tensor `{tensor}` has shape {got:?}, the model's config needs {want:?}")]
    Shape {
        tensor: String,
        got: Vec<usize>,
        want: Vec<usize>,
    },
}

/// Checks every tensor the header lists: its element count and byte size do not overflow,
/// and its data lies inside the `file_len`-byte file.
pub(crate) fn check_tensors(content: &Content, file_len: u64) -> Result<(), GgufLayoutError> {
    // Sorted, so that a file with several bad tensors always reports the same one.
    let mut names: Vec<&String> = content.tensor_infos.keys().collect();
    names.sort();
    for name in names {
        if let Some(info) = content.tensor_infos.get(name) {
            check_tensor(name, info, content.tensor_data_offset, file_len)?;
        }
    }
    Ok(())
}

/// Checks one tensor (see [`check_tensors`]); returns its byte size.
pub(crate) fn check_tensor(
    name: &str,
    info: &TensorInfo,
    data_offset: u64,
    file_len: u64,
) -> Result<u64, GgufLayoutError> {
    let dims = info.shape.dims();
    let elements = dims
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or_else(|| GgufLayoutError::ElementsOverflow {
            tensor: name.to_string(),
            dims: dims.to_vec(),
        })?;
    let block = info.ggml_dtype.block_size();
    if block == 0 || !elements.is_multiple_of(block) {
        return Err(GgufLayoutError::PartialBlock {
            tensor: name.to_string(),
            elements,
            block,
        });
    }
    let extent_overflow = || GgufLayoutError::ExtentOverflow {
        tensor: name.to_string(),
        offset: info.offset,
    };
    let bytes = (elements / block)
        .checked_mul(info.ggml_dtype.type_size())
        .and_then(|b| u64::try_from(b).ok())
        .ok_or_else(extent_overflow)?;
    let start = data_offset
        .checked_add(info.offset)
        .ok_or_else(extent_overflow)?;
    let end = start.checked_add(bytes).ok_or_else(extent_overflow)?;
    if end > file_len {
        return Err(GgufLayoutError::PastEnd {
            tensor: name.to_string(),
            start,
            bytes,
            file_len,
        });
    }
    Ok(bytes)
}

/// The dimensions of tensor `name`, which must be present.
pub(crate) fn dims<'a>(content: &'a Content, name: &str) -> Result<&'a [usize], GgufLayoutError> {
    content
        .tensor_infos
        .get(name)
        .map(|info| info.shape.dims())
        .ok_or_else(|| GgufLayoutError::Missing {
            tensor: name.to_string(),
        })
}

/// Checks that tensor `name` is present with exactly the shape `want`.
pub(crate) fn expect_shape(
    content: &Content,
    name: &str,
    want: &[usize],
) -> Result<(), GgufLayoutError> {
    let got = dims(content, name)?;
    if got.contains(&0) {
        return Err(GgufLayoutError::Empty {
            tensor: name.to_string(),
            dims: got.to_vec(),
        });
    }
    if got != want {
        return Err(GgufLayoutError::Shape {
            tensor: name.to_string(),
            got: got.to_vec(),
            want: want.to_vec(),
        });
    }
    Ok(())
}

#[cfg(test)]
#[path = "gguf_check_tests.rs"]
mod tests;

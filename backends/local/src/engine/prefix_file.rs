//! The bytes of one saved prefix: a system turn's tokens and their keys and values, as
//! [`super::prefix_store`] keeps them on disk.
//!
//! Layout, little-endian: the magic `HEARTHKV`, the format version (u32), the identity of the
//! model and build that computed it (32 bytes), then the token count, layers, KV heads, head
//! size and element kind (u32 each), the tokens (u32 each), each layer's keys then values as
//! rows (`kv_heads × tokens × head_dim` elements each), and last the sha256 of everything
//! before it. A file is read only when its length is the one these fields give for the model
//! now loaded, so a file of any other size is refused before a byte is read into memory.

use candle_core::{DType, Tensor};
use half::f16;
use sha2::{Digest, Sha256};

use crate::error::EngineError;
use crate::model::KvCache;

const MAGIC: &[u8; 8] = b"HEARTHKV";
/// Bumped whenever the layout or what the identity covers changes.
pub(super) const VERSION: u32 = 1;
/// Magic, version, identity, then five u32 fields.
pub(super) const HEADER_BYTES: usize = 8 + 4 + 32 + 5 * 4;
const DIGEST_BYTES: usize = 32;

/// The shape a file must have to be read into a cache of the loaded model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileShape {
    pub tokens: usize,
    pub layers: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub element: Element,
}

/// How each key and value is stored: the cache's own dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Element {
    F16,
    F32,
}

impl Element {
    pub(super) fn of(dtype: DType) -> Option<Self> {
        match dtype {
            DType::F16 => Some(Self::F16),
            DType::F32 => Some(Self::F32),
            _ => None,
        }
    }

    fn code(self) -> u32 {
        match self {
            Self::F16 => 0,
            Self::F32 => 1,
        }
    }

    fn bytes(self) -> usize {
        match self {
            Self::F16 => 2,
            Self::F32 => 4,
        }
    }
}

impl FileShape {
    /// Elements in one layer's keys (and as many in its values).
    fn layer_elements(&self) -> usize {
        self.kv_heads * self.tokens * self.head_dim
    }

    /// The file's whole length; saturating, so that absurd sizes match no real file.
    pub(super) fn file_bytes(&self) -> u64 {
        let kv = (self.layer_elements() as u64)
            .saturating_mul(2 * self.layers as u64)
            .saturating_mul(self.element.bytes() as u64);
        (HEADER_BYTES as u64 + 4 * self.tokens as u64 + DIGEST_BYTES as u64).saturating_add(kv)
    }
}

/// Why a file was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Refusal {
    #[error("it is {found} bytes long where {expected} were expected")]
    Length { expected: u64, found: u64 },
    #[error("it is not a hearth prefix file of version {VERSION}")]
    Format,
    #[error("it was made by another model file or build")]
    Identity,
    #[error("its header does not fit the loaded model")]
    Shape,
    #[error("its checksum does not match its contents")]
    Checksum,
}

/// The file for `cache`'s first `shape.tokens` tokens, which are `tokens`.
pub(super) fn encode(
    identity: &[u8; 32],
    shape: FileShape,
    tokens: &[u32],
    cache: &KvCache,
) -> Result<Vec<u8>, EngineError> {
    let mut out = Vec::with_capacity(usize::try_from(shape.file_bytes()).unwrap_or(0));
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(identity);
    for field in [
        shape.tokens,
        shape.layers,
        shape.kv_heads,
        shape.head_dim,
        shape.element.code() as usize,
    ] {
        out.extend_from_slice(&as_u32(field)?.to_le_bytes());
    }
    for &token in tokens {
        out.extend_from_slice(&token.to_le_bytes());
    }
    for layer in 0..shape.layers {
        let (k, v) = cache.view(layer, shape.tokens)?;
        for rows in [k, v] {
            let rows = rows.flatten_all()?;
            match shape.element {
                Element::F16 => rows
                    .to_vec1::<f16>()?
                    .iter()
                    .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
                Element::F32 => rows
                    .to_vec1::<f32>()?
                    .iter()
                    .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
            }
        }
    }
    let digest = Sha256::digest(&out);
    out.extend_from_slice(&digest);
    Ok(out)
}

fn as_u32(n: usize) -> Result<u32, EngineError> {
    u32::try_from(n).map_err(|_| EngineError::InvalidRequest(format!("{n} does not fit a u32")))
}

/// The identity and shape a file's first [`HEADER_BYTES`] say it has, if it is a hearth
/// prefix file of this version at all.
pub(super) fn read_header(bytes: &[u8; HEADER_BYTES]) -> Option<([u8; 32], FileShape)> {
    if &bytes[..8] != MAGIC || u32_at(bytes, 8) != VERSION {
        return None;
    }
    let identity: [u8; 32] = bytes[12..44].try_into().ok()?;
    let field = |i: usize| u32_at(bytes, 44 + 4 * i) as usize;
    let element = match field(4) {
        0 => Element::F16,
        1 => Element::F32,
        _ => return None,
    };
    let shape = FileShape {
        tokens: field(0),
        layers: field(1),
        kv_heads: field(2),
        head_dim: field(3),
        element,
    };
    Some((identity, shape))
}

/// A file's tokens, and each layer's keys and values.
pub(super) type Decoded = (Vec<u32>, Vec<(Tensor, Tensor)>);

/// The tokens of `bytes`, checked against what the loaded model expects, and each layer's keys
/// and values as `(1, kv_heads, tokens, head_dim)` tensors on the CPU.
pub(super) fn decode(
    bytes: &[u8],
    identity: &[u8; 32],
    shape: FileShape,
) -> Result<Result<Decoded, Refusal>, EngineError> {
    if bytes.len() as u64 != shape.file_bytes() {
        return Ok(Err(Refusal::Length {
            expected: shape.file_bytes(),
            found: bytes.len() as u64,
        }));
    }
    let (body, digest) = bytes.split_at(bytes.len() - DIGEST_BYTES);
    let header: &[u8; HEADER_BYTES] = body[..HEADER_BYTES]
        .try_into()
        .map_err(|_| EngineError::InvalidRequest("prefix file shorter than its header".into()))?;
    let Some((found, found_shape)) = read_header(header) else {
        return Ok(Err(Refusal::Format));
    };
    if &found != identity {
        return Ok(Err(Refusal::Identity));
    }
    if found_shape != shape {
        return Ok(Err(Refusal::Shape));
    }
    if Sha256::digest(body).as_slice() != digest {
        return Ok(Err(Refusal::Checksum));
    }
    let tokens = tokens_of(&body[HEADER_BYTES..HEADER_BYTES + 4 * shape.tokens]);
    let dims = [1, shape.kv_heads, shape.tokens, shape.head_dim];
    let per = shape.layer_elements() * shape.element.bytes();
    let mut rows = body[HEADER_BYTES + 4 * shape.tokens..].chunks_exact(per);
    let mut tensor = || -> Result<Tensor, EngineError> {
        let chunk = rows
            .next()
            .ok_or_else(|| EngineError::InvalidRequest("prefix file: short of rows".into()))?;
        let cpu = candle_core::Device::Cpu;
        Ok(match shape.element {
            Element::F16 => {
                let values: Vec<f16> = chunk
                    .chunks_exact(2)
                    .map(|b| f16::from_le_bytes([b[0], b[1]]))
                    .collect();
                Tensor::from_vec(values, &dims, &cpu)?
            }
            Element::F32 => {
                let values: Vec<f32> = chunk
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect();
                Tensor::from_vec(values, &dims, &cpu)?
            }
        })
    };
    let mut layers = Vec::with_capacity(shape.layers);
    for _ in 0..shape.layers {
        let k = tensor()?;
        let v = tensor()?;
        layers.push((k, v));
    }
    Ok(Ok((tokens, layers)))
}

/// The tokens stored in `bytes`, four little-endian bytes each.
pub(super) fn tokens_of(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

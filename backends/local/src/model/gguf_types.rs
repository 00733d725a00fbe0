//! Names the tensor a GGUF holds in a type candle cannot read. candle's header reader stops at
//! such a tensor with "unknown dtype for tensor 20", where 20 is the ggml type id (IQ4_NL),
//! not a tensor; a user who downloaded an IQ4_XS file deserves its name and what to fetch
//! instead. The header is read again here, only after candle refused it, and every read is
//! bounded by the file: a crafted header yields `None` and candle's own message stands.

use std::io::{self, Read};

/// The first tensor whose ggml type candle cannot read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct UnreadableTensor {
    pub name: String,
    pub type_id: u32,
}

impl std::fmt::Display for UnreadableTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match type_name(self.type_id) {
            Some(name) => format!("{name} (ggml type {})", self.type_id),
            None => format!("of ggml type {}", self.type_id),
        };
        write!(
            f,
            "tensor `{}` is {kind}, which hearth cannot read. It reads F32, F16, BF16, Q4_0, \
             Q4_1, Q5_0, Q5_1, Q8_0 and the K-quants Q2_K to Q6_K: use a file in one of those \
             (a Q4_K_M, Q5_K_M or Q8_0 download of the same model)",
            self.name
        )
    }
}

/// The ggml types candle reads (`GgmlDType::from_u32`).
fn candle_reads(type_id: u32) -> bool {
    matches!(type_id, 0..=3 | 6..=15 | 30)
}

/// ggml's name for a type id, for those a GGUF may hold.
fn type_name(type_id: u32) -> Option<&'static str> {
    Some(match type_id {
        16 => "IQ2_XXS",
        17 => "IQ2_XS",
        18 => "IQ3_XXS",
        19 => "IQ1_S",
        20 => "IQ4_NL",
        21 => "IQ3_S",
        22 => "IQ2_S",
        23 => "IQ4_XS",
        24 => "I8",
        25 => "I16",
        26 => "I32",
        27 => "I64",
        28 => "F64",
        29 => "IQ1_M",
        34 => "TQ1_0",
        35 => "TQ2_0",
        39 => "MXFP4",
        _ => return None,
    })
}

/// Longest tensor name read; ggml's limit is 64 bytes.
const MAX_NAME: u64 = 4096;
/// Deepest nesting of metadata arrays followed.
const MAX_DEPTH: u32 = 4;

/// Scans a GGUF (v2 or v3) header from its start for the first tensor candle cannot read.
pub(crate) fn unreadable_tensor(reader: &mut impl Read) -> Option<UnreadableTensor> {
    let mut r = Header { reader };
    if r.u32().ok()? != u32::from_le_bytes(*b"GGUF") || !matches!(r.u32().ok()?, 2 | 3) {
        return None;
    }
    let (tensors, entries) = (r.u64().ok()?, r.u64().ok()?);
    for _ in 0..entries {
        r.skip_string().ok()?;
        let value_type = r.u32().ok()?;
        r.skip_value(value_type, 0).ok()?;
    }
    for _ in 0..tensors {
        let len = r.u64().ok()?;
        if len > MAX_NAME {
            return None;
        }
        let mut name = vec![0; len as usize];
        r.reader.read_exact(&mut name).ok()?;
        let dims = r.u32().ok()?;
        r.skip(u64::from(dims).checked_mul(8)?).ok()?;
        let type_id = r.u32().ok()?;
        r.u64().ok()?; // the data offset
        if !candle_reads(type_id) {
            let name = String::from_utf8_lossy(&name).into_owned();
            return Some(UnreadableTensor { name, type_id });
        }
    }
    None
}

struct Header<'a, R> {
    reader: &'a mut R,
}

impl<R: Read> Header<'_, R> {
    fn u32(&mut self) -> io::Result<u32> {
        let mut b = [0; 4];
        self.reader.read_exact(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    fn u64(&mut self) -> io::Result<u64> {
        let mut b = [0; 8];
        self.reader.read_exact(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// Reads past `n` bytes, failing at the end of the file.
    fn skip(&mut self, n: u64) -> io::Result<()> {
        let copied = io::copy(&mut self.reader.by_ref().take(n), &mut io::sink())?;
        match copied == n {
            true => Ok(()),
            false => Err(io::ErrorKind::UnexpectedEof.into()),
        }
    }

    fn skip_string(&mut self) -> io::Result<()> {
        let len = self.u64()?;
        self.skip(len)
    }

    /// Reads past one metadata value of GGUF type `value_type`.
    fn skip_value(&mut self, value_type: u32, depth: u32) -> io::Result<()> {
        let fixed = match value_type {
            0 | 1 | 7 => 1,
            2 | 3 => 2,
            4..=6 => 4,
            10..=12 => 8,
            8 => return self.skip_string(),
            9 if depth < MAX_DEPTH => {
                let (element, count) = (self.u32()?, self.u64()?);
                // Each element takes a byte at least, so a crafted count ends at the file's end.
                for _ in 0..count {
                    self.skip_value(element, depth + 1)?;
                }
                return Ok(());
            }
            _ => return Err(io::ErrorKind::InvalidData.into()),
        };
        self.skip(fixed)
    }
}

#[cfg(test)]
mod tests {
    use super::{UnreadableTensor, unreadable_tensor};

    /// A GGUF v3 header: one string and one array of strings in the metadata, then tensors of
    /// the given names and type ids.
    fn header(tensors: &[(&str, u32)]) -> Vec<u8> {
        let mut h = b"GGUF".to_vec();
        h.extend(3u32.to_le_bytes());
        h.extend((tensors.len() as u64).to_le_bytes());
        h.extend(2u64.to_le_bytes());
        let string = |h: &mut Vec<u8>, s: &str| {
            h.extend((s.len() as u64).to_le_bytes());
            h.extend(s.as_bytes());
        };
        string(&mut h, "general.architecture");
        h.extend(8u32.to_le_bytes());
        string(&mut h, "qwen2");
        string(&mut h, "tokenizer.ggml.tokens");
        h.extend(9u32.to_le_bytes());
        h.extend(8u32.to_le_bytes());
        h.extend(2u64.to_le_bytes());
        string(&mut h, "a");
        string(&mut h, "bc");
        for (name, type_id) in tensors {
            string(&mut h, name);
            h.extend(2u32.to_le_bytes());
            h.extend(896u64.to_le_bytes());
            h.extend(896u64.to_le_bytes());
            h.extend(type_id.to_le_bytes());
            h.extend(0u64.to_le_bytes());
        }
        h
    }

    #[test]
    fn the_first_tensor_of_a_type_candle_lacks_is_named() {
        let h = header(&[("blk.0.attn_k.weight", 12), ("blk.0.attn_q.weight", 23)]);
        let found = unreadable_tensor(&mut h.as_slice()).unwrap();
        assert_eq!(
            found,
            UnreadableTensor {
                name: "blk.0.attn_q.weight".into(),
                type_id: 23
            }
        );
        let message = found.to_string();
        assert!(message.contains("`blk.0.attn_q.weight` is IQ4_XS (ggml type 23)"));
        assert!(message.contains("Q4_K_M"), "{message}");
    }

    #[test]
    fn a_header_candle_reads_names_nothing() {
        let h = header(&[("a", 0), ("b", 8), ("c", 14), ("d", 30)]);
        assert_eq!(unreadable_tensor(&mut h.as_slice()), None);
    }

    /// Every prefix of a header that names a tensor ends the scan quietly, as do a huge
    /// array count and a huge name length.
    #[test]
    fn truncated_or_crafted_headers_name_nothing() {
        let h = header(&[("blk.0.attn_q.weight", 20)]);
        for len in 0..h.len() {
            assert_eq!(unreadable_tensor(&mut &h[..len]), None, "{len} bytes");
        }
        let mut huge_count = header(&[("x", 20)]);
        // The array's count sits after its key, its type and its element type.
        let at = huge_count
            .windows(21)
            .position(|w| w == b"tokenizer.ggml.tokens")
            .unwrap();
        huge_count[at + 29..at + 37].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(unreadable_tensor(&mut huge_count.as_slice()), None);
        let mut huge_name = header(&[("x", 20)]);
        let at = huge_name.len() - (8 + 1 + 4 + 16 + 4 + 8);
        huge_name[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(unreadable_tensor(&mut huge_name.as_slice()), None);
    }

    #[test]
    fn a_type_without_a_name_is_given_by_its_id() {
        let h = header(&[("w", 99)]);
        let message = unreadable_tensor(&mut h.as_slice()).unwrap().to_string();
        assert!(message.contains("`w` is of ggml type 99"), "{message}");
    }
}

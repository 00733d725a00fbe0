//! What each token id writes, as bytes: the grammar judges tokens by their bytes, and a
//! byte-level BPE token may hold part of a UTF-8 character, which a `String` cannot.

use std::collections::HashMap;

use tokenizers::DecoderWrapper;

use crate::tokenizer::TextTokenizer;

/// How a token may be used while a call is being written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenKind {
    /// Ordinary text: allowed when its bytes fit the grammar.
    Text,
    /// An added token (`<|im_start|>`, `<tool_call>`, ...): allowed only as the closing tag.
    Added,
    /// Ends the generation: never allowed inside a call.
    End,
}

/// The bytes and kind of every token id.
pub(crate) struct Vocab {
    bytes: Vec<Box<[u8]>>,
    kinds: Vec<TokenKind>,
}

impl Vocab {
    pub fn new(tokenizer: &TextTokenizer) -> Self {
        let inner = &tokenizer.inner;
        let size = inner.get_vocab_size(true);
        let byte_level = matches!(inner.get_decoder(), Some(DecoderWrapper::ByteLevel(_)));
        let unicode_to_byte = byte_level.then(byte_level_alphabet);
        let added = inner.get_added_tokens_decoder();
        let mut bytes = Vec::with_capacity(size);
        let mut kinds = Vec::with_capacity(size);
        for id in 0..size as u32 {
            let (token, kind) = match added.get(&id) {
                Some(token) => (token.content.as_bytes().to_vec(), TokenKind::Added),
                None => {
                    let piece = inner.id_to_token(id).unwrap_or_default();
                    let mapped = unicode_to_byte
                        .as_ref()
                        .and_then(|map| piece.chars().map(|c| map.get(&c).copied()).collect());
                    // Not byte-level (or not a byte-level piece): what decoding it alone writes.
                    let text = mapped.unwrap_or_else(|| {
                        tokenizer.decode(&[id]).unwrap_or_default().into_bytes()
                    });
                    (text, TokenKind::Text)
                }
            };
            let kind = if tokenizer.eos_ids().contains(&id) {
                TokenKind::End
            } else {
                kind
            };
            bytes.push(token.into_boxed_slice());
            kinds.push(kind);
        }
        Self { bytes, kinds }
    }

    /// A table from explicit entries (tests).
    #[cfg(test)]
    pub fn from_entries(entries: &[(&str, TokenKind)]) -> Self {
        Self {
            bytes: entries.iter().map(|(t, _)| t.as_bytes().into()).collect(),
            kinds: entries.iter().map(|(_, k)| *k).collect(),
        }
    }

    /// The bytes of `id`; empty for ids past the tokenizer's (a model's embedding table is
    /// often padded beyond it).
    pub fn bytes(&self, id: u32) -> &[u8] {
        self.bytes.get(id as usize).map_or(&[], |b| b)
    }

    pub fn kind(&self, id: u32) -> TokenKind {
        self.kinds
            .get(id as usize)
            .copied()
            .unwrap_or(TokenKind::End)
    }
}

/// GPT-2's byte-level alphabet, reversed: the printable character each byte is written as in
/// the vocabulary, back to the byte. Printable bytes stand for themselves; the others (controls,
/// space, and a few in Latin-1) are shifted to code points from 256 up, in byte order.
fn byte_level_alphabet() -> HashMap<char, u8> {
    let mut map = HashMap::with_capacity(256);
    let mut shifted = 0u32;
    for b in 0..=255u8 {
        let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        let c = if printable {
            char::from(b)
        } else {
            shifted += 1;
            // 256 + n for the n-th unprintable byte: never past U+0143, always a char.
            char::from_u32(255 + shifted).unwrap_or(char::REPLACEMENT_CHARACTER)
        };
        map.insert(c, b);
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_byte_level_alphabet_is_a_bijection_with_the_known_marks() {
        let map = byte_level_alphabet();
        assert_eq!(map.len(), 256);
        // GPT-2 writes a space as `Ġ` (U+0120) and a newline as `Ċ` (U+010A).
        assert_eq!(map[&'\u{120}'], b' ');
        assert_eq!(map[&'\u{10A}'], b'\n');
        assert_eq!(map[&'a'], b'a');
    }
}

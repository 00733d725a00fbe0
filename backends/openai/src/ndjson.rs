//! NDJSON framing: a response body cut into lines, whatever the byte chunks cut through
//! (mid-line, mid-UTF-8 character), in linear time, each line capped at [`MAX_LINE`].

use crate::body::Framer;
use crate::limits::{Breach, MAX_LINE};
use crate::line_buf::{Ends, LineBuf};

/// Framing state of one NDJSON body. Its payloads are the non-empty lines, trimmed; a last
/// line without a newline still counts when the body ends. Invalid UTF-8 is replaced, so such
/// a line fails to parse as JSON later instead of stopping the stream here.
#[derive(Debug)]
pub(crate) struct NdjsonFramer {
    lines: LineBuf,
}

impl NdjsonFramer {
    pub(crate) fn new() -> Self {
        Self::with_cap(MAX_LINE)
    }

    /// A framer with another line cap (tests use small ones).
    pub(crate) fn with_cap(max_line: usize) -> Self {
        Self {
            lines: LineBuf::new(Ends::Newline, max_line),
        }
    }
}

impl Framer for NdjsonFramer {
    fn push(&mut self, chunk: &[u8], out: &mut Vec<String>) -> Result<(), Breach> {
        self.lines.push(chunk, |line| {
            out.extend(text_of(line));
            Ok::<_, Breach>(())
        })
    }

    fn finish(&mut self, out: &mut Vec<String>) -> Result<(), Breach> {
        self.lines.finish(|line| {
            out.extend(text_of(line));
            Ok(())
        })
    }
}

fn text_of(line: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(line);
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use futures::{StreamExt, stream};
    use hearth_backend::StreamLimit;

    use super::*;
    use crate::body::{BodyError, payloads};

    fn split(framer: NdjsonFramer, pieces: Vec<Vec<u8>>) -> Vec<Result<String, BodyError>> {
        let body = stream::iter(pieces.into_iter().map(|p| Ok::<_, String>(Bytes::from(p))));
        futures::executor::block_on(payloads(body, framer).collect())
    }

    #[test]
    fn lines_are_the_same_wherever_the_bytes_are_cut() {
        let body = "{\"a\":\"é😀\"}\r\n\n  \n{\"b\":2}\n{\"c\":3}".as_bytes();
        let want: Vec<Result<String, BodyError>> = vec![
            Ok("{\"a\":\"é😀\"}".into()),
            Ok("{\"b\":2}".into()),
            Ok("{\"c\":3}".into()),
        ];
        assert_eq!(split(NdjsonFramer::new(), vec![body.to_vec()]), want);
        for cut in 0..=body.len() {
            let pieces = vec![body[..cut].to_vec(), body[cut..].to_vec()];
            assert_eq!(split(NdjsonFramer::new(), pieces), want, "cut at {cut}");
        }
        let bytes: Vec<Vec<u8>> = body.iter().map(|b| vec![*b]).collect();
        assert_eq!(
            split(NdjsonFramer::new(), bytes),
            want,
            "one byte at a time"
        );
    }

    #[test]
    fn a_broken_body_ends_with_its_error() {
        let body = stream::iter(vec![
            Ok(Bytes::from_static(b"{\"a\":1}\n{\"par")),
            Err("connection reset".to_string()),
            Ok(Bytes::from_static(b"tial\"}\n")),
        ]);
        let got: Vec<_> =
            futures::executor::block_on(payloads(body, NdjsonFramer::new()).collect());
        assert_eq!(
            got,
            vec![
                Ok("{\"a\":1}".to_string()),
                Err(BodyError::Broken("connection reset".into()))
            ]
        );
    }

    #[test]
    fn a_line_past_the_cap_ends_the_body_with_a_breach() {
        let too_long = Err(BodyError::TooLarge(Breach::new(StreamLimit::Line, 8)));
        let got = split(
            NdjsonFramer::with_cap(8),
            vec![b"{\"a\":1}\n{\"b\":".to_vec(), b"222}\n".to_vec()],
        );
        assert_eq!(got, vec![Ok("{\"a\":1}".to_string()), too_long.clone()]);
        // A line that never ends, a byte at a time: refused at its ninth byte.
        let endless: Vec<Vec<u8>> = (0..100).map(|_| b"x".to_vec()).collect();
        assert_eq!(split(NdjsonFramer::with_cap(8), endless), vec![too_long]);
    }
}

//! Splits a response body into NDJSON lines, whatever the byte chunks cut through (mid-line,
//! mid-UTF-8 character).

use bytes::Bytes;
use futures::{Stream, StreamExt};

/// The non-empty lines of `body`, without their line ending. A last line without a newline
/// still counts when the body ends. An `Err` is the body breaking off (as text for the log);
/// nothing follows it. Invalid UTF-8 is replaced, so such a line fails to parse as JSON later
/// instead of stopping the stream here.
pub(crate) fn lines<S, E>(body: S) -> impl Stream<Item = Result<String, String>> + Send
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::fmt::Display + Send,
{
    async_stream::stream! {
        let mut body = Box::pin(body);
        let mut buf: Vec<u8> = Vec::new();
        // Bytes of `buf` already known to hold no newline, so a long line is scanned once.
        let mut scanned = 0;
        while let Some(chunk) = body.next().await {
            let bytes = match chunk {
                Ok(bytes) => bytes,
                Err(err) => {
                    yield Err(err.to_string());
                    return;
                }
            };
            buf.extend_from_slice(&bytes);
            while let Some(offset) = buf[scanned..].iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = buf.drain(..=scanned + offset).collect();
                scanned = 0;
                if let Some(text) = text_of(&line) {
                    yield Ok(text);
                }
            }
            scanned = buf.len();
        }
        if let Some(text) = text_of(&buf) {
            yield Ok(text);
        }
    }
}

fn text_of(line: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(line);
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

#[cfg(test)]
mod tests {
    use futures::stream;

    use super::*;

    fn split(pieces: Vec<Vec<u8>>) -> Vec<Result<String, String>> {
        let body = stream::iter(pieces.into_iter().map(|p| Ok::<_, String>(Bytes::from(p))));
        futures::executor::block_on(lines(body).collect())
    }

    #[test]
    fn lines_are_the_same_wherever_the_bytes_are_cut() {
        let body = "{\"a\":\"é😀\"}\r\n\n  \n{\"b\":2}\n{\"c\":3}".as_bytes();
        let want: Vec<Result<String, String>> = vec![
            Ok("{\"a\":\"é😀\"}".into()),
            Ok("{\"b\":2}".into()),
            Ok("{\"c\":3}".into()),
        ];
        assert_eq!(split(vec![body.to_vec()]), want);
        for cut in 0..=body.len() {
            let pieces = vec![body[..cut].to_vec(), body[cut..].to_vec()];
            assert_eq!(split(pieces), want, "cut at {cut}");
        }
        let bytes: Vec<Vec<u8>> = body.iter().map(|b| vec![*b]).collect();
        assert_eq!(split(bytes), want, "one byte at a time");
    }

    #[test]
    fn a_broken_body_ends_with_its_error() {
        let body = stream::iter(vec![
            Ok(Bytes::from_static(b"{\"a\":1}\n{\"par")),
            Err("connection reset".to_string()),
            Ok(Bytes::from_static(b"tial\"}\n")),
        ]);
        let got: Vec<_> = futures::executor::block_on(lines(body).collect());
        assert_eq!(
            got,
            vec![Ok("{\"a\":1}".to_string()), Err("connection reset".into())]
        );
    }
}

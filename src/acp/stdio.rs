//! hearth's stdio transport: the SDK's [`Lines`] over stdin and stdout, with stdin read as bytes
//! so that what a client sends can cost it one line, never the server. A line that is not UTF-8
//! is read with its bad bytes replaced (it then fails to parse and is answered with a parse
//! error, as any garbage is); a line longer than [`MAX_LINE_BYTES`] is dropped as it arrives,
//! never held whole, and stands in as a short note (so the parse error echoes a few bytes, not
//! megabytes).

use std::io;

use agent_client_protocol::Lines;
use futures::{Sink, Stream};
use tokio::io::{AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};

/// The longest line read: room for a prompt with several screenshots, bounded against a client
/// that never ends its line.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// ACP over this process's stdin and stdout.
pub fn transport() -> Lines<
    impl Sink<String, Error = io::Error> + Send + 'static,
    impl Stream<Item = io::Result<String>> + Send + 'static,
> {
    Lines::new(
        line_sink(tokio::io::stdout()),
        line_stream(BufReader::new(tokio::io::stdin()), MAX_LINE_BYTES),
    )
}

/// Writes each message as one line and flushes it.
fn line_sink<W: AsyncWrite + Unpin + Send + 'static>(
    writer: W,
) -> impl Sink<String, Error = io::Error> + Send + 'static {
    Box::pin(futures::sink::unfold(
        writer,
        async |mut writer, line: String| {
            writer.write_all(line.as_bytes()).await?;
            writer.write_all(b"\n").await?;
            writer.flush().await?;
            Ok::<_, io::Error>(writer)
        },
    ))
}

/// The lines of `reader`, each at most `max` bytes (see the module docs).
fn line_stream<R: tokio::io::AsyncRead + Unpin + Send + 'static>(
    reader: BufReader<R>,
    max: usize,
) -> impl Stream<Item = io::Result<String>> + Send + 'static {
    Box::pin(futures::stream::unfold(
        Some(reader),
        move |state| async move {
            let mut reader = state?;
            match next_line(&mut reader, max).await {
                Ok(Some(line)) => Some((Ok(line), Some(reader))),
                Ok(None) => None,
                Err(err) => Some((Err(err), None)),
            }
        },
    ))
}

/// One line (without its `\n` or `\r\n`), `None` at the end of input.
async fn next_line<R: tokio::io::AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    max: usize,
) -> io::Result<Option<String>> {
    let mut line = Vec::new();
    let mut dropped = 0usize;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            if line.is_empty() && dropped == 0 {
                return Ok(None);
            }
            return Ok(Some(finish(line, dropped)));
        }
        let (take, ends) = match memchr::memchr(b'\n', available) {
            Some(at) => (at, true),
            None => (available.len(), false),
        };
        if dropped == 0 && line.len() + take <= max {
            line.extend_from_slice(&available[..take]);
        } else {
            dropped += line.len() + take;
            line.clear();
        }
        reader.consume(take + usize::from(ends));
        if ends {
            return Ok(Some(finish(line, dropped)));
        }
    }
}

fn finish(mut line: Vec<u8>, dropped: usize) -> String {
    if dropped > 0 {
        tracing::warn!(
            bytes = dropped,
            "dropped an input line over {MAX_LINE_BYTES} bytes"
        );
        return format!("(a line of {dropped} bytes, longer than hearth reads, was dropped)");
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    match String::from_utf8(line) {
        Ok(text) => text,
        Err(err) => {
            tracing::warn!("an input line is not UTF-8; reading it with its bad bytes replaced");
            String::from_utf8_lossy(err.as_bytes()).into_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<String> {
        let reader = BufReader::with_capacity(7, std::io::Cursor::new(input.to_vec()));
        line_stream(reader, max).map(Result::unwrap).collect().await
    }

    #[tokio::test]
    async fn bad_bytes_cost_one_line_and_long_lines_are_dropped_as_they_come() {
        let mut input = b"{\"a\":1}\r\n".to_vec();
        input.extend_from_slice(b"\xff\xfe bad\n");
        input.extend_from_slice(&[b'x'; 100]);
        input.extend_from_slice(b"\nlast");
        let got = lines(&input, 64).await;
        assert_eq!(got[0], r#"{"a":1}"#);
        assert_eq!(got[1], "\u{fffd}\u{fffd} bad");
        assert!(got[2].contains("100 bytes"), "{}", got[2]);
        assert_eq!(got[3], "last");
        assert_eq!(got.len(), 4);
        assert!(lines(b"", 64).await.is_empty());
        assert_eq!(lines(b"\n\n", 64).await, ["", ""]);
        // Exactly at the limit is kept.
        assert_eq!(lines(&[b'y'; 64], 64).await, ["y".repeat(64)]);
    }
}

#[cfg(test)]
#[path = "stdio_prop_tests.rs"]
mod prop_tests;

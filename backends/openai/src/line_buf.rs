//! Splits a body that arrives in byte chunks into lines, in linear time and bounded memory:
//! each byte is scanned once, only the unfinished last line is kept between chunks, and that
//! line is refused as soon as it would pass the cap (it is never buffered past it).

use hearth_backend::StreamLimit;

use crate::limits::Breach;

/// Which bytes end a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ends {
    /// SSE: `\n`, `\r\n` or a lone `\r`.
    Sse,
    /// NDJSON: `\n` only (a `\r` before it stays in the line, for the caller to trim).
    Newline,
}

/// The unfinished line between chunks, and where the last line end left off.
#[derive(Debug)]
pub(crate) struct LineBuf {
    /// Bytes of the current line so far; never holds a line end.
    buf: Vec<u8>,
    /// The last chunk ended on `\r`: a `\n` opening the next chunk belongs to that line end.
    skip_lf: bool,
    ends: Ends,
    max_line: usize,
}

impl LineBuf {
    pub(crate) fn new(ends: Ends, max_line: usize) -> Self {
        Self {
            buf: Vec::new(),
            skip_lf: false,
            ends,
            max_line,
        }
    }

    /// Bytes held for the unfinished line.
    #[cfg(test)]
    pub(crate) fn pending(&self) -> usize {
        self.buf.len()
    }

    /// Hands every line `chunk` completes to `line`, without its line end, and keeps the
    /// rest. Fails when a line is longer than the cap, before buffering it.
    pub(crate) fn push<E: From<Breach>>(
        &mut self,
        chunk: &[u8],
        mut line: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut rest = chunk;
        if self.skip_lf && !rest.is_empty() {
            self.skip_lf = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        while let Some(end) = self.find_end(rest) {
            let (head, tail) = rest.split_at(end);
            self.check(head.len())?;
            if self.buf.is_empty() {
                line(head)?;
            } else {
                self.buf.extend_from_slice(head);
                line(&self.buf)?;
                self.buf.clear();
            }
            rest = self.after_end(tail);
        }
        self.check(rest.len())?;
        self.buf.extend_from_slice(rest);
        Ok(())
    }

    /// The body ended: the unfinished line, if any, counts as a last line.
    pub(crate) fn finish<E>(
        &mut self,
        mut line: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        self.skip_lf = false;
        if self.buf.is_empty() {
            return Ok(());
        }
        let last = std::mem::take(&mut self.buf);
        line(&last)
    }

    fn find_end(&self, bytes: &[u8]) -> Option<usize> {
        match self.ends {
            Ends::Sse => bytes.iter().position(|&b| b == b'\n' || b == b'\r'),
            Ends::Newline => bytes.iter().position(|&b| b == b'\n'),
        }
    }

    /// `tail` (which starts with a line end) past that line end; a `\r` that ends the chunk
    /// may still be half of `\r\n`.
    fn after_end<'a>(&mut self, tail: &'a [u8]) -> &'a [u8] {
        match tail {
            [b'\r', b'\n', rest @ ..] => rest,
            [b'\r'] => {
                self.skip_lf = true;
                &[]
            }
            [_, rest @ ..] => rest,
            [] => tail,
        }
    }

    /// Fails when `more` bytes would make the current line longer than the cap.
    fn check(&self, more: usize) -> Result<(), Breach> {
        if self.buf.len().saturating_add(more) > self.max_line {
            return Err(Breach::new(StreamLimit::Line, self.max_line));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(ends: Ends, max: usize, chunks: &[&[u8]]) -> Result<Vec<String>, Breach> {
        let mut buf = LineBuf::new(ends, max);
        let mut out = Vec::new();
        for chunk in chunks {
            buf.push(chunk, |l| {
                out.push(String::from_utf8_lossy(l).into_owned());
                Ok::<_, Breach>(())
            })?;
        }
        buf.finish(|l| {
            out.push(String::from_utf8_lossy(l).into_owned());
            Ok::<_, Breach>(())
        })?;
        Ok(out)
    }

    #[test]
    fn every_sse_line_end_splits_even_across_chunks() {
        let want = vec!["a", "b", "", "c", "d"];
        assert_eq!(lines(Ends::Sse, 99, &[b"a\nb\r\n\rc\rd"]).unwrap(), want);
        assert_eq!(
            lines(Ends::Sse, 99, &[b"a\nb\r", b"\n\r", b"c\r", b"", b"d"]).unwrap(),
            want
        );
        assert_eq!(
            lines(Ends::Sse, 99, &[b"a\r", b"\r"]).unwrap(),
            vec!["a", ""]
        );
    }

    #[test]
    fn newline_ends_keep_a_carriage_return_in_the_line() {
        let got = lines(Ends::Newline, 99, &[b"a\r", b"\nb\rc"]).unwrap();
        assert_eq!(got, vec!["a\r", "b\rc"]);
    }

    #[test]
    fn a_line_past_the_cap_fails_before_it_is_buffered() {
        let breach = Breach::new(StreamLimit::Line, 4);
        assert_eq!(
            lines(Ends::Sse, 4, &[b"abcd\nefgh"]).unwrap(),
            ["abcd", "efgh"]
        );
        assert_eq!(lines(Ends::Sse, 4, &[b"abcde\n"]), Err(breach));
        assert_eq!(lines(Ends::Sse, 4, &[b"ab", b"cde"]), Err(breach));
        let mut buf = LineBuf::new(Ends::Newline, 4);
        assert_eq!(buf.push(b"abc", |_| Ok::<_, Breach>(())), Ok(()));
        assert!(buf.push(b"de", |_| Ok::<_, Breach>(())).is_err());
        assert_eq!(buf.pending(), 3, "the refused bytes were not kept");
    }
}

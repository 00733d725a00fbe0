//! Property test of the ACP line reader: any bytes, read through any buffer size, never panic,
//! give one line per `\n` (plus a last unterminated one), never a line over the cap, and keep
//! every short line exactly. An ignored figure test shows the time is linear in the input.

use futures::StreamExt;
use proptest::prelude::*;
use tokio::io::BufReader;

use super::line_stream;

fn read_all(input: &[u8], capacity: usize, max: usize) -> Vec<String> {
    let reader = BufReader::with_capacity(capacity, std::io::Cursor::new(input.to_vec()));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(line_stream(reader, max).map(Result::unwrap).collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn any_bytes_any_buffer(
        input in proptest::collection::vec(
            prop_oneof![4 => any::<u8>(), 1 => Just(b'\n'), 1 => Just(b'\r')],
            0..600,
        ),
        capacity in 1usize..40,
        max in 1usize..80,
    ) {
        let lines = read_all(&input, capacity, max);
        let breaks = input.iter().filter(|&&b| b == b'\n').count();
        let tail = !input.is_empty() && input.last() != Some(&b'\n');
        prop_assert_eq!(lines.len(), breaks + usize::from(tail));
        for (line, raw) in lines.iter().zip(input.split(|&b| b == b'\n')) {
            // The cap counts the line's bytes as sent (a `\r` before the `\n` included).
            if raw.len() > max {
                prop_assert!(line.contains("was dropped"), "{:?}", line);
            } else {
                let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
                prop_assert_eq!(line, &String::from_utf8_lossy(raw).into_owned());
            }
        }
    }
}

/// Figures: one 64 MiB line (dropped as it streams) and 64 MiB of short lines, read with the
/// real cap. Run with `cargo test --release -- --ignored --nocapture line_reader_figures`.
#[test]
#[ignore = "prints figures"]
fn line_reader_figures() {
    let big = vec![b'x'; 64 << 20];
    let started = std::time::Instant::now();
    let lines = read_all(&big, 8 << 10, super::MAX_LINE_BYTES);
    println!(
        "one 64 MiB line: {:?} ({} line)",
        started.elapsed(),
        lines.len()
    );
    let short = b"{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n".repeat((64 << 20) / 31);
    let started = std::time::Instant::now();
    let lines = read_all(&short, 8 << 10, super::MAX_LINE_BYTES);
    println!(
        "64 MiB of short lines: {:?} ({} lines)",
        started.elapsed(),
        lines.len()
    );
}

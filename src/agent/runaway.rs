//! A reply that has stopped saying anything: a small model in a loop writes blank lines or the
//! same line until the token limit, which on a CPU costs minutes. Such a reply is cut as soon
//! as the pattern is certain, and the turn treats it as an empty answer.

/// Blank lines in a row that no answer needs.
const MAX_BLANK_LINES: usize = 24;
/// The same non-empty line this many times in a row (blank lines between them aside).
const MAX_SAME_LINES: usize = 16;
/// A cycle of two to four lines repeated this many times ("This will output:" / "" / "" …
/// and its longer kin).
const MAX_CYCLES: usize = 8;
/// The longest cycle looked for, in non-empty lines.
const MAX_PERIOD: usize = 4;
/// How much of the reply's end is looked at.
const TAIL_BYTES: usize = 8 * 1024;
/// A unit of at most this many bytes repeated over the reply's last [`STUTTER_BYTES`]: the
/// 0.5B asked for a checksum it never computed writes `2e2e2e…` on one line until the limit.
const MAX_STUTTER_UNIT: usize = 16;
const STUTTER_BYTES: usize = 512;

/// Whether the end of `text` shows a runaway reply.
pub fn is_runaway(text: &str) -> bool {
    let mut start = text.len().saturating_sub(TAIL_BYTES);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let tail = &text[start..];
    let blank_run = tail
        .bytes()
        .rev()
        .take_while(u8::is_ascii_whitespace)
        .filter(|b| *b == b'\n')
        .count();
    if blank_run >= MAX_BLANK_LINES || stutters(tail.as_bytes()) {
        return true;
    }
    // Whole lines only: the last one may still be growing. Blank lines are left out: a loop
    // often pads its repeated line with them.
    let lines: Vec<&str> = tail
        .lines()
        .rev()
        .skip(usize::from(!tail.ends_with('\n')))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(MAX_SAME_LINES.max(MAX_CYCLES * MAX_PERIOD))
        .collect();
    let repeats = |period: usize, times: usize| {
        lines.len() >= period * times
            && (period..period * times).all(|i| lines[i] == lines[i - period])
    };
    repeats(1, MAX_SAME_LINES) || (2..=MAX_PERIOD).any(|period| repeats(period, MAX_CYCLES))
}

/// Whether the last [`STUTTER_BYTES`] of `tail` are one short unit over and over, within a
/// line or across lines.
fn stutters(tail: &[u8]) -> bool {
    let Some(end) = tail.len().checked_sub(STUTTER_BYTES).map(|at| &tail[at..]) else {
        return false;
    };
    (1..=MAX_STUTTER_UNIT).any(|unit| (unit..end.len()).all(|i| end[i] == end[i - unit]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_floods_and_stuck_lines_are_runaways_and_real_answers_are_not() {
        assert!(is_runaway(&format!("Done.{}", "\n".repeat(30))));
        assert!(is_runaway(&"\n \n".repeat(20)));
        assert!(is_runaway(&"I will read the file.\n".repeat(16)));
        assert!(!is_runaway(&"I will read the file.\n".repeat(15)));
        assert!(!is_runaway("fn main() {\n    println!(\"hi\");\n}\n\n\n"));
        let code = "    }\n".repeat(6) + "}\n";
        assert!(!is_runaway(&code));
        // A table of distinct rows, however long, is an answer.
        let rows: String = (0..200).map(|i| format!("| {i} | x |\n")).collect();
        assert!(!is_runaway(&rows));
        assert!(!is_runaway(""));
    }

    #[test]
    fn a_line_that_stutters_to_the_limit_is_a_runaway_and_long_varied_lines_are_not() {
        let seen = format!(
            "The sha256 checksum of payload.txt is 97b3a0e4{}",
            "b2".repeat(300)
        );
        assert!(is_runaway(&seen));
        assert!(is_runaway(&"| 0 ".repeat(200)));
        assert!(
            !is_runaway(&format!("x = {}", "b2".repeat(200))),
            "under 512 bytes"
        );
        let hex: String = (0..200u32)
            .map(|i| format!("{:08x}", i.wrapping_mul(2_654_435_761)))
            .collect();
        assert!(!is_runaway(&hex));
        let unit_of_17 = "abcdefghijklmnopq".repeat(40);
        assert!(
            !is_runaway(&unit_of_17),
            "units longer than 16 bytes are left to the line rules"
        );
    }

    /// What the default 0.5B model wrote after a tool result until its token limit.
    #[test]
    fn a_line_padded_with_blanks_or_a_short_cycle_is_a_runaway() {
        let seen = format!("Here's how:\n\n{}", "This will output:\n\n\n".repeat(16));
        assert!(is_runaway(&seen));
        assert!(is_runaway(&"Step one.\nStep two.\n\n".repeat(8)));
        assert!(!is_runaway(&"Step one.\nStep two.\n\n".repeat(7)));
        assert!(is_runaway(&"a\nb\nc\nd\n".repeat(8)));
        // Code whose lines recur, but not as a loop.
        let code: String = (0..40)
            .map(|i| format!("    x{i} = read()\n    check(x{i})\n}}\n"))
            .collect();
        assert!(!is_runaway(&code));
    }
}

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
    if blank_run >= MAX_BLANK_LINES {
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

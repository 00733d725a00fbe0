//! A reply that has stopped saying anything: a small model in a loop writes blank lines or the
//! same line until the token limit, which on a CPU costs minutes. Such a reply is cut as soon
//! as the pattern is certain, and the turn treats it as an empty answer.

/// Blank lines in a row that no answer needs.
const MAX_BLANK_LINES: usize = 24;
/// The same non-empty line this many times in a row.
const MAX_SAME_LINES: usize = 16;
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
    // Whole lines only: the last one may still be growing.
    let mut lines = tail.lines().rev().skip(usize::from(!tail.ends_with('\n')));
    let Some(last) = lines.next().map(str::trim).filter(|l| !l.is_empty()) else {
        return false;
    };
    1 + lines.take_while(|l| l.trim() == last).count() >= MAX_SAME_LINES
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
}

//! Which programs a shell command line runs, for "always allow"/"always reject" rules keyed by
//! program. Deliberately conservative: a line whose programs cannot be read off safely
//! (command substitution, wrappers that run other commands, shell keywords) yields no
//! programs, so no "always" rule can allow it and the user is asked each time.

/// Programs that run other commands given as arguments: allowing them "always" would allow
/// anything.
const WRAPPERS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "fish", "ksh", "eval", "exec", "source", ".", "xargs", "sudo",
    "doas", "su", "env", "nohup", "timeout", "nice", "time", "command", "builtin", "parallel",
    "watch", "script", "ssh",
];

/// Shell keywords that start compound commands this reader does not follow.
const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
    "function", "select",
];

/// The programs `command` runs, in order, without duplicates; empty when they cannot be
/// determined safely.
pub fn command_programs(command: &str) -> Vec<String> {
    if command.contains("$(")
        || command.contains('`')
        || command.contains("<(")
        || command.contains(">(")
    {
        return Vec::new();
    }
    let mut programs: Vec<String> = Vec::new();
    for segment in split_segments(command) {
        let Some(program) = segment_program(&segment) else {
            return Vec::new();
        };
        if let Some(program) = program
            && !programs.contains(&program)
        {
            programs.push(program);
        }
    }
    programs
}

/// Splits on `;`, `&&`, `||`, `|`, `&` and newlines outside quotes.
fn split_segments(command: &str) -> Vec<String> {
    let mut segments = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let chars: Vec<char> = command.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        // `2>&1`, `<&0` and `&>file` are redirections, not separators.
        let redirect = c == '&'
            && (i > 0 && matches!(chars[i - 1], '>' | '<') || chars.get(i + 1) == Some(&'>'));
        if escaped {
            current.push(c);
            escaped = false;
            continue;
        }
        match (quote, c) {
            (Some('\''), '\'') | (Some('"'), '"') => {
                quote = None;
                current.push(c);
            }
            (Some(_), _) => current.push(c),
            (None, '\\') => {
                escaped = true;
                current.push(c);
            }
            (None, '\'' | '"') => {
                quote = Some(c);
                current.push(c);
            }
            (None, '&') if redirect => current.push(c),
            (None, ';' | '&' | '|' | '\n') => segments.push(std::mem::take(&mut current)),
            (None, _) => current.push(c),
        }
    }
    segments.push(current);
    segments
}

/// The program of one simple command: `Some(None)` for an empty segment, `None` when it
/// cannot be keyed.
fn segment_program(segment: &str) -> Option<Option<String>> {
    let mut words = segment
        .split_whitespace()
        .map(|w| w.trim_start_matches(['(', '{', '!']))
        .filter(|w| !w.is_empty());
    let program = loop {
        let Some(word) = words.next() else {
            return Some(None);
        };
        if is_assignment(word) || word.chars().all(|c| c == ')' || c == '}') {
            continue;
        }
        break word;
    };
    if program.starts_with(['<', '>'])
        || program.chars().next().is_some_and(|c| c.is_ascii_digit()) && program.contains('>')
    {
        return None;
    }
    let unquoted: String = program
        .chars()
        .filter(|c| !matches!(c, '\'' | '"' | '\\'))
        .collect();
    let unquoted = unquoted.trim_end_matches([')', '}']).to_owned();
    let base = unquoted.rsplit('/').next().unwrap_or(&unquoted);
    if unquoted.is_empty() || WRAPPERS.contains(&base) || KEYWORDS.contains(&unquoted.as_str()) {
        return None;
    }
    Some(Some(unquoted))
}

/// `NAME=value` (an environment assignment before the program).
fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_table() {
        let cases: &[(&str, &[&str])] = &[
            ("cargo test", &["cargo"]),
            ("  ls -la  ", &["ls"]),
            ("cargo test 2>&1 | tail -n 20", &["cargo", "tail"]),
            ("cd src && ls; pwd", &["cd", "ls", "pwd"]),
            ("RUST_LOG=debug cargo run", &["cargo"]),
            ("git status && git diff", &["git"]),
            ("echo 'a | b; c' | wc -l", &["echo", "wc"]),
            ("echo \"x && rm -rf /\"", &["echo"]),
            ("./target/debug/hearth --help", &["./target/debug/hearth"]),
            ("(cd a && make)", &["cd", "make"]),
            ("make &", &["make"]),
            ("cargo build &> log; cat log", &["cargo", "cat"]),
            ("", &[]),
            ("echo $(rm -rf /)", &[]),
            ("echo `id`", &[]),
            ("diff <(ls a) <(ls b)", &[]),
            ("sudo rm -rf /", &[]),
            ("ls | xargs rm", &[]),
            ("env FOO=1 cargo test", &[]),
            ("bash -c 'rm -rf /'", &[]),
            ("/bin/sh -c x", &[]),
            ("for f in *; do rm $f; done", &[]),
            (">out.txt echo hi", &[]),
            ("2>err cargo build", &[]),
        ];
        for (command, want) in cases {
            let want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
            assert_eq!(command_programs(command), want, "{command}");
        }
    }
}

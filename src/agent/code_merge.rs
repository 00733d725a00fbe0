//! Putting a code block from an answer into the file it is for, by the text alone (the
//! answer_edits assist; `answer_edit` decides when). Two shapes of block are understood:
//! - **the whole file again**, changed where the request asked: it keeps most of the file's
//!   lines and drops at most a few, and it elides nothing (`# ... rest of the code`);
//! - **Python definitions**: a block of only `def`, `class` and import statements, each
//!   definition replacing the file's top-level one of the same name or added at the end, each
//!   import not there yet added after the file's imports.
//!
//! Anything else (a snippet from the middle of a function, a usage example beside a definition)
//! is not placed: where it goes is a guess, and a wrong guess loses the user's code.

/// Least share of the file's lines a block must keep to be taken for the whole file.
const KEPT_SHARE: f64 = 0.6;
/// Most lines of the file a whole-file block may drop (or change), beside a fifth of them.
const DROPPED_LINES: usize = 3;

/// Whether `block` reads as the whole of `old`, changed: it keeps at least 60% of the file's
/// non-blank lines, drops at most three of them or a fifth, and elides nothing.
pub fn is_whole_file(old: &str, block: &str) -> bool {
    kept_lines(old, block).is_some_and(|(kept, of)| {
        kept as f64 >= KEPT_SHARE * of as f64 && of - kept <= DROPPED_LINES.max(of / 5)
    })
}

/// Whether `block`, asked for as the whole of `old`, keeps the rest of it: it drops at most
/// three of the file's non-blank lines or a fifth, and elides nothing. A small file may be
/// rewritten entirely (a two-line function renamed keeps none of its lines).
pub fn keeps_the_rest(old: &str, block: &str) -> bool {
    kept_lines(old, block).is_some_and(|(kept, of)| of - kept <= DROPPED_LINES.max(of / 5))
}

/// How many of `old`'s non-blank lines `block` holds (indentation aside), and of how many;
/// `None` when `old` has none or `block` elides code.
fn kept_lines(old: &str, block: &str) -> Option<(usize, usize)> {
    let old_lines: Vec<&str> = old
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if old_lines.is_empty() || block.lines().any(elides) {
        return None;
    }
    let block_lines: std::collections::HashSet<&str> = block.lines().map(str::trim).collect();
    let kept = old_lines
        .iter()
        .filter(|l| block_lines.contains(*l))
        .count();
    Some((kept, old_lines.len()))
}

/// Whether `new` changes more of `old` than blank lines and trailing blanks: a block that
/// only reflows the file is not the change asked for, and not worth a write.
pub fn changes_something(old: &str, new: &str) -> bool {
    let substance = |text: &str| -> Vec<String> {
        text.lines()
            .map(str::trim_end)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect()
    };
    substance(old) != substance(new)
}

/// A line that stands for code left out: `# ...`, `// rest of the code`, `...` alone.
fn elides(line: &str) -> bool {
    let line = line.trim();
    if line == "..." || line == "\u{2026}" {
        return true;
    }
    let Some(comment) = ["#", "//", "/*", "<!--", "--"]
        .iter()
        .find_map(|opener| line.strip_prefix(opener))
    else {
        return false;
    };
    let comment = comment.trim().to_ascii_lowercase();
    let words = [
        "rest of",
        "existing code",
        "remaining code",
        "unchanged",
        "same as before",
    ];
    comment.starts_with("...")
        || comment.ends_with("...")
        || comment.starts_with('\u{2026}')
        || words.iter().any(|w| comment.contains(w))
}

/// One top-level statement of a Python module, with the decorators and comments above it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Unit {
    kind: UnitKind,
    /// Its lines, each ending in a newline, without the blank lines after it.
    text: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum UnitKind {
    /// `def name` or `async def name`.
    Function(String),
    Class(String),
    Import,
    Other,
}

/// The module's top-level units, in order. A unit starts at a line in column 0 that is not
/// blank; decorators and comments start the unit they stand above.
fn units(source: &str) -> Vec<Unit> {
    let mut units: Vec<Unit> = Vec::new();
    let mut pending = String::new();
    let mut scan = Scan::default();
    for line in source.lines() {
        let starts = scan.at_statement_start()
            && !line.is_empty()
            && !line.starts_with([' ', '\t', ')', ']', '}']);
        scan.line(line);
        if starts && (line.starts_with('@') || line.starts_with('#')) {
            pending.push_str(line);
            pending.push('\n');
            continue;
        }
        if starts {
            let mut text = std::mem::take(&mut pending);
            text.push_str(line);
            text.push('\n');
            units.push(Unit {
                kind: kind_of(line),
                text,
            });
        } else if let Some(unit) = units.last_mut().filter(|_| pending.is_empty()) {
            unit.text.push_str(line);
            unit.text.push('\n');
        } else {
            pending.push_str(line);
            pending.push('\n');
        }
    }
    if !pending.trim().is_empty() {
        units.push(Unit {
            kind: UnitKind::Other,
            text: pending,
        });
    }
    for unit in &mut units {
        unit.text = format!("{}\n", unit.text.trim_matches('\n'));
    }
    units
}

/// Where a line stands in the module's text: inside brackets, or inside a triple-quoted
/// string, no line starts a statement. Strings and comments are skipped, so a `"("` or a
/// `# (` does not open a bracket.
#[derive(Debug, Default)]
struct Scan {
    depth: usize,
    /// The quotes of the triple-quoted string the last line left open.
    open_string: Option<&'static str>,
}

impl Scan {
    fn at_statement_start(&self) -> bool {
        self.depth == 0 && self.open_string.is_none()
    }

    fn line(&mut self, line: &str) {
        let mut rest = line;
        while !rest.is_empty() {
            if let Some(quotes) = self.open_string {
                match rest.find(quotes) {
                    Some(end) => {
                        rest = &rest[end + 3..];
                        self.open_string = None;
                    }
                    None => return,
                }
                continue;
            }
            let Some(c) = rest.chars().next() else {
                return;
            };
            match c {
                '#' => return,
                '"' | '\'' => {
                    let triple = if c == '"' { "\"\"\"" } else { "\'\'\'" };
                    if let Some(after) = rest.strip_prefix(triple) {
                        self.open_string = Some(triple);
                        rest = after;
                    } else {
                        rest = after_string(&rest[1..], c);
                    }
                    continue;
                }
                '(' | '[' | '{' => self.depth += 1,
                ')' | ']' | '}' => self.depth = self.depth.saturating_sub(1),
                _ => {}
            }
            rest = &rest[c.len_utf8()..];
        }
    }
}

/// The text after a one-line string whose opening `quote` is already consumed (the rest of
/// the line where it does not close).
fn after_string(text: &str, quote: char) -> &str {
    let mut escaped = false;
    for (at, c) in text.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            c if c == quote && !escaped => return &text[at + 1..],
            _ => escaped = false,
        }
    }
    ""
}

fn kind_of(line: &str) -> UnitKind {
    let name_after = |rest: &str| -> String {
        rest.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    if let Some(rest) = line
        .strip_prefix("def ")
        .or_else(|| line.strip_prefix("async def "))
    {
        UnitKind::Function(name_after(rest.trim_start()))
    } else if let Some(rest) = line.strip_prefix("class ") {
        UnitKind::Class(name_after(rest.trim_start()))
    } else if line.starts_with("import ") || line.starts_with("from ") {
        UnitKind::Import
    } else {
        UnitKind::Other
    }
}

/// `old` with the Python definitions and imports of `block` merged in, or `None` when the block
/// holds anything else, or changes nothing.
pub fn merge_python(old: &str, block: &str) -> Option<String> {
    let incoming = units(block);
    if incoming.is_empty()
        || incoming.iter().any(|u| u.kind == UnitKind::Other)
        || !incoming.iter().any(|u| u.kind != UnitKind::Import)
    {
        return None;
    }
    let mut merged = old.to_string();
    for unit in incoming.iter().filter(|u| u.kind != UnitKind::Import) {
        merged = put_definition(&merged, unit);
    }
    let imports: Vec<&str> = incoming
        .iter()
        .filter(|u| u.kind == UnitKind::Import)
        .map(|u| u.text.trim_end())
        .collect();
    merged = add_imports(&merged, &imports);
    (merged != old).then_some(merged)
}

/// Whether `block` defines a function or class that `old` defines at its top level too.
pub fn redefines(old: &str, block: &str) -> bool {
    let defined: Vec<UnitKind> = units(old)
        .into_iter()
        .map(|u| u.kind)
        .filter(|k| matches!(k, UnitKind::Function(_) | UnitKind::Class(_)))
        .collect();
    units(block).iter().any(|u| defined.contains(&u.kind))
}

/// `source` with `unit` in place of its top-level definition of the same name, or at the end.
fn put_definition(source: &str, unit: &Unit) -> String {
    let existing = units(source);
    let Some(at) = existing.iter().position(|u| u.kind == unit.kind) else {
        let mut out = source.trim_end().to_string();
        if !out.is_empty() {
            out.push_str("\n\n\n");
        }
        out.push_str(&unit.text);
        return out;
    };
    // The unit's text is a substring of the source as written (lines kept whole, trailing
    // blanks cut), so it is found where it stands.
    let old_text = &existing[at].text;
    let start = nth_occurrence(source, old_text, &existing[..at]);
    match start {
        Some(start) => {
            let mut out = String::with_capacity(source.len() + unit.text.len());
            out.push_str(&source[..start]);
            out.push_str(&unit.text);
            out.push_str(&source[start + old_text.len()..]);
            out
        }
        None => source.to_string(),
    }
}

/// Where `needle` (the text of a unit after `before`) starts in `source`: the first match after
/// the units before it.
fn nth_occurrence(source: &str, needle: &str, before: &[Unit]) -> Option<usize> {
    let mut from = 0;
    for unit in before {
        from = source[from..]
            .find(&unit.text)
            .map(|i| from + i + unit.text.len())?;
    }
    source[from..].find(needle).map(|i| from + i)
}

/// `source` with each of `imports` (whole statements) it does not already hold added after its
/// last top-level import, or at its top (below a shebang, encoding line or docstring).
pub fn add_imports(source: &str, imports: &[&str]) -> String {
    let lines: Vec<&str> = source.lines().collect();
    let new: Vec<&str> = imports
        .iter()
        .copied()
        .filter(|import| !lines.iter().any(|l| l.trim_end() == *import))
        .fold(Vec::new(), |mut seen, import| {
            if !seen.contains(&import) {
                seen.push(import);
            }
            seen
        });
    if new.is_empty() {
        return source.to_string();
    }
    let last_import = lines
        .iter()
        .rposition(|l| l.starts_with("import ") || l.starts_with("from "));
    let at = match last_import {
        Some(i) => i + 1,
        None => module_header_lines(&lines),
    };
    let mut out: Vec<String> = lines[..at].iter().map(|l| l.to_string()).collect();
    out.extend(new.iter().map(|i| i.to_string()));
    if last_import.is_none() && at < lines.len() {
        out.push(String::new());
        if lines[at].starts_with("def ") || lines[at].starts_with("class ") {
            out.push(String::new());
        }
    }
    out.extend(lines[at..].iter().map(|l| l.to_string()));
    let mut text = out.join("\n");
    text.push('\n');
    text
}

/// How many lines open the module before any code: a shebang, an encoding comment, a
/// docstring (one line, or until its closing quotes) and the blank lines after them.
fn module_header_lines(lines: &[&str]) -> usize {
    let mut at = 0;
    while at < lines.len() && lines[at].starts_with("#") {
        at += 1;
    }
    let opening = lines.get(at).map(|l| l.trim_start());
    if let Some(quote) =
        opening.and_then(|l| ["\"\"\"", "'''"].into_iter().find(|q| l.starts_with(q)))
    {
        let first = &lines[at].trim_start()[3..];
        if !first.contains(quote) {
            at += 1;
            while at < lines.len() && !lines[at].contains(quote) {
                at += 1;
            }
        }
        at += 1;
        while at < lines.len() && lines[at].trim().is_empty() {
            at += 1;
        }
    }
    at.min(lines.len())
}

#[cfg(test)]
#[path = "code_merge_tests.rs"]
mod tests;

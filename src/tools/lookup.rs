//! Terms the prompt names, looked up in the project before the model answers (the
//! lookup_terms assist). Asked "Which function in the src directory calls connect_db?",
//! "Which file has a TODO comment?" or "Which license does this project use?", Qwen2.5-Coder
//! 0.5B answers at once, from imagination ("MIT"), and calls no tool. The lines of the
//! project's text files that hold the prompt's identifiers (`connect_db`, `TODO`) or its rarer
//! words (`license`), each with the two lines above it, ride along with the prompt, as a code
//! search would show them. Bounded: a few terms, a few hits, files already attached, large,
//! binary or secret-looking left out; `.gitignore` respected; a term found everywhere is not
//! a lookup but noise, and is dropped.

use std::path::{Path, PathBuf};

use hearth_backend::ContentPart;

use super::mentions::{looks_secret, named_paths};
use super::walk::walker;

/// Terms looked up per prompt at most.
const MAX_TERMS: usize = 5;
/// Files read at most, however large the project.
const MAX_FILES: usize = 2_000;
/// A file larger than this is not searched.
const MAX_FILE_BYTES: u64 = 256 * 1024;
/// Bytes read per prompt at most: the lookup runs before every prompt, so it must stay cheap
/// in a large repository (the files read first are searched, the rest are not).
const MAX_TOTAL_BYTES: usize = 8 * 1024 * 1024;
/// Hits shown at most, over all terms.
const MAX_HITS: usize = 12;
/// Hits of one term in one file shown at most.
const MAX_HITS_PER_FILE: usize = 3;
/// A term with more hits than this names nothing in particular: it is dropped.
const COMMON_TERM_HITS: usize = 25;
/// Lines shown above a hit.
const LINES_ABOVE: usize = 2;
/// Longest line shown, in characters.
const MAX_LINE_CHARS: usize = 160;
/// Plain words shorter than this are not looked up.
const MIN_WORD_CHARS: usize = 5;

/// Words of requests that name nothing in a project.
const COMMON_WORDS: [&str; 72] = [
    "about",
    "above",
    "after",
    "again",
    "answer",
    "below",
    "between",
    "change",
    "changes",
    "class",
    "classes",
    "command",
    "could",
    "create",
    "defined",
    "directory",
    "every",
    "exactly",
    "explain",
    "files",
    "first",
    "folder",
    "function",
    "functions",
    "given",
    "inside",
    "method",
    "methods",
    "named",
    "number",
    "other",
    "output",
    "please",
    "print",
    "prints",
    "printed",
    "program",
    "project",
    "python",
    "return",
    "returns",
    "script",
    "second",
    "should",
    "shows",
    "something",
    "string",
    "their",
    "there",
    "these",
    "thing",
    "those",
    "under",
    "using",
    "value",
    "values",
    "where",
    "which",
    "while",
    "whole",
    "would",
    "write",
    "written",
    "takes",
    "called",
    "calls",
    "without",
    "within",
    "lines",
    "times",
    "rename",
    "remove",
];

/// A term to look up.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Term {
    text: String,
    /// Identifiers match as written; plain words in any case.
    exact: bool,
}

/// One line that holds a term, with the lines above it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Hit {
    path: String,
    /// 1-based number of the first line shown.
    first_line: usize,
    lines: Vec<String>,
    /// The definition the line is in (`def load_orders():`), as `git grep -p` shows it.
    scope: Option<String>,
}

/// The `<context search=…>` part for `prompt`'s terms in the project at `cwd`, or `None` when
/// it names none or none is found outside the files already `attached` (their names).
pub async fn lookup_terms(prompt: &[ContentPart], cwd: &Path) -> Option<ContentPart> {
    let text: String = prompt
        .iter()
        .filter_map(|p| match p {
            ContentPart::Text { text } if !text.starts_with("<context ") => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let named = named_paths(&text);
    let terms = terms(&text, &named);
    if terms.is_empty() {
        return None;
    }
    let root = cwd.to_path_buf();
    let hits = tokio::task::spawn_blocking(move || search(&root, &terms, &named))
        .await
        .ok()?;
    render(&hits)
}

/// The prompt's identifiers and rarer words, in order, each once; words of the paths it names
/// left out (their files ride along whole).
fn terms(text: &str, named: &[String]) -> Vec<Term> {
    let mut terms: Vec<Term> = Vec::new();
    let in_named = |word: &str| {
        named.iter().any(|path| {
            path.split(|c: char| !c.is_alphanumeric() && c != '_')
                .any(|part| part == word)
        })
    };
    for word in text.split(|c: char| !c.is_alphanumeric() && c != '_') {
        if word.is_empty() || word.len() > 64 || in_named(word) {
            continue;
        }
        let term = if is_identifier(word) {
            Term {
                text: word.to_string(),
                exact: true,
            }
        } else if word.chars().count() >= MIN_WORD_CHARS
            && word.chars().all(|c| c.is_alphabetic())
            && !COMMON_WORDS.contains(&word.to_lowercase().as_str())
        {
            Term {
                text: word.to_lowercase(),
                exact: false,
            }
        } else {
            continue;
        };
        if !terms.iter().any(|t| t.text == term.text) {
            terms.push(term);
        }
    }
    // Identifiers first: they name one thing; a plain word may name many.
    terms.sort_by_key(|t| !t.exact);
    terms.truncate(MAX_TERMS);
    terms
}

/// `snake_case`, `camelCase` or `ALLCAPS` (of three letters or more): a name from code.
fn is_identifier(word: &str) -> bool {
    let letters = word.chars().filter(|c| c.is_ascii_alphabetic()).count();
    if letters < 3 || !word.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        return false;
    }
    let snake = word.contains('_') && word.chars().any(|c| c.is_ascii_alphabetic());
    let camel = word.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && word.chars().any(|c| c.is_ascii_uppercase());
    let caps = word
        .chars()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    snake || camel || caps
}

/// The hits of `terms` in the project's text files, named files left out.
fn search(root: &Path, terms: &[Term], named: &[String]) -> Vec<Hit> {
    let skipped: Vec<PathBuf> = named.iter().map(|n| root.join(n)).collect();
    let mut per_term: Vec<Vec<Hit>> = vec![Vec::new(); terms.len()];
    let mut read = 0usize;
    let files = walker(root)
        .build()
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .take(MAX_FILES);
    for entry in files {
        let path = entry.path();
        let Ok(relative) = path.strip_prefix(root) else {
            continue;
        };
        let Some(relative) = relative.to_str() else {
            continue;
        };
        if skipped.iter().any(|s| s == path) || looks_secret(relative) {
            continue;
        }
        let Some(text) = read_text(path) else {
            continue;
        };
        read += text.len();
        if read > MAX_TOTAL_BYTES {
            break;
        }
        let lines: Vec<&str> = text.lines().collect();
        for (term, hits) in terms.iter().zip(per_term.iter_mut()) {
            if hits.len() > COMMON_TERM_HITS {
                continue;
            }
            let mut in_file = 0;
            for (at, line) in lines.iter().enumerate() {
                let found = if term.exact {
                    line.contains(term.text.as_str())
                } else {
                    line.to_lowercase().contains(term.text.as_str())
                };
                if !found {
                    continue;
                }
                in_file += 1;
                if in_file <= MAX_HITS_PER_FILE {
                    let first = at.saturating_sub(LINES_ABOVE);
                    hits.push(Hit {
                        path: relative.to_string(),
                        first_line: first + 1,
                        lines: lines[first..=at].iter().map(|l| shown(l)).collect(),
                        scope: enclosing_definition(&lines, at).map(shown),
                    });
                } else {
                    // Still counted, to tell a common term.
                    hits.push(Hit {
                        path: String::new(),
                        first_line: 0,
                        lines: Vec::new(),
                        scope: None,
                    });
                }
            }
        }
    }
    let mut shown_hits: Vec<Hit> = Vec::new();
    for hits in per_term {
        if hits.len() > COMMON_TERM_HITS {
            continue;
        }
        for hit in hits.into_iter().filter(|h| !h.lines.is_empty()) {
            if shown_hits.len() == MAX_HITS {
                return shown_hits;
            }
            if !shown_hits.contains(&hit) {
                shown_hits.push(hit);
            }
        }
    }
    shown_hits
}

/// Words that open a definition, in the languages people ask about most.
const DEFINITION_WORDS: [&str; 7] = ["def", "class", "fn", "function", "func", "impl", "trait"];

/// Words that may come before a definition's word.
const MODIFIERS: [&str; 8] = [
    "async", "pub", "export", "default", "static", "unsafe", "public", "private",
];

/// The definition line `lines[at]` is in: the nearest line above it, indented less, that opens
/// a function, class or impl (`async`, `pub`, `export` and the like before the word allowed).
/// "Which function calls connect_db?" is answered by it.
fn enclosing_definition<'a>(lines: &[&'a str], at: usize) -> Option<&'a str> {
    let indent = |line: &str| line.len() - line.trim_start().len();
    let depth = indent(lines[at]);
    if depth == 0 {
        return None;
    }
    lines[..at]
        .iter()
        .rev()
        .filter(|line| !line.trim().is_empty() && indent(line) < depth)
        .find(|line| {
            line.split_whitespace()
                .map(|word| word.split(['(', '<']).next().unwrap_or_default())
                .find(|word| !MODIFIERS.contains(word))
                .is_some_and(|word| DEFINITION_WORDS.contains(&word))
        })
        .map(|line| line.trim())
}

/// The file's text, where it is small, valid UTF-8 and has no NUL byte.
fn read_text(path: &Path) -> Option<String> {
    if std::fs::metadata(path).ok()?.len() > MAX_FILE_BYTES {
        return None;
    }
    let text = String::from_utf8(std::fs::read(path).ok()?).ok()?;
    (!text.contains('\u{0}')).then_some(text)
}

fn shown(line: &str) -> String {
    let mut cut: String = line.chars().take(MAX_LINE_CHARS).collect();
    if cut.len() < line.len() {
        cut.push('…');
    }
    cut
}

/// The hits as one `<context search="…">` part: each hit's path and line, then its lines.
fn render(hits: &[Hit]) -> Option<ContentPart> {
    if hits.is_empty() {
        return None;
    }
    let mut body = String::new();
    for hit in hits {
        let last = hit.first_line + hit.lines.len() - 1;
        match &hit.scope {
            Some(scope) => body.push_str(&format!("{}, line {last}, in `{scope}`:\n", hit.path)),
            None => body.push_str(&format!("{}, line {last}:\n", hit.path)),
        }
        for line in &hit.lines {
            body.push_str(line);
            body.push('\n');
        }
        body.push('\n');
    }
    Some(ContentPart::text(format!(
        "<context search=\"the project's lines that hold words of the request\">\n{}\n</context>\n\n",
        body.trim_end()
    )))
}

#[cfg(test)]
#[path = "lookup_tests.rs"]
mod tests;

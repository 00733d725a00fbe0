//! Files the prompt names: "What does greet.py do?" carries greet.py along, as an editor's
//! @-mention would, so a small model answers from the file instead of from imagination.
//! Bounded (a few small text files), confined to the project, read through the host (the
//! editor's buffer where there is one), and never a file that looks like it holds secrets.

use std::path::Path;

use hearth_backend::ContentPart;

use super::paths::{Resolved, is_within, resolve};
use crate::host::ClientOps;

/// Files attached to one prompt at most.
pub const MAX_FILES: usize = 3;
/// A file larger than this is left to the model's tools.
pub const MAX_FILE_BYTES: u64 = 12 * 1024;
/// Bytes attached to one prompt at most.
pub const MAX_TOTAL_BYTES: usize = 24 * 1024;

/// Names that are files without an extension.
const BARE_NAMES: [&str; 8] = [
    "Makefile",
    "Dockerfile",
    "VERSION",
    "LICENSE",
    "README",
    "Justfile",
    "Procfile",
    "Gemfile",
];

/// What a prompt's text names that could be a project file, in order, each once.
pub fn named_paths(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let separators = |c: char| {
        c.is_whitespace()
            || matches!(
                c,
                ',' | ';' | '(' | ')' | '[' | ']' | '"' | '\'' | '`' | '<' | '>' | '@'
            )
    };
    for word in text.split(separators) {
        let word = word.trim_end_matches(['.', '?', '!', ':']);
        if looks_like_path(word) && !out.iter().any(|w| w == word) {
            out.push(word.to_string());
        }
    }
    out
}

fn looks_like_path(word: &str) -> bool {
    if word.is_empty()
        || word.len() > 200
        || word.contains("://")
        || word.starts_with(['/', '~', '-'])
    {
        return false;
    }
    if word.split('/').any(|part| part == "..") {
        return false;
    }
    let name = word.rsplit('/').next().unwrap_or(word);
    if BARE_NAMES.contains(&name) {
        return true;
    }
    match name.rsplit_once('.') {
        Some((stem, ext)) => {
            !ext.is_empty()
                && ext.len() <= 10
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && ext.chars().any(|c| c.is_ascii_alphabetic())
                && (!stem.is_empty() || name.len() > 1)
        }
        None => false,
    }
}

/// Names whose content is likely a secret: never sent to the model unasked.
pub fn looks_secret(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    name.starts_with(".env")
        || name.starts_with("id_rsa")
        || name.starts_with("id_ed25519")
        || name.contains("credential")
        || name.contains("secret")
        || [".pem", ".key", ".p12", ".pfx", ".keystore"]
            .iter()
            .any(|ext| name.ends_with(ext))
}

/// The paths `text` names that resolve inside the project at `cwd`, in the order named: each
/// name as written and where it resolves. A name that leads out of the project (`../x`, a
/// symlink out) is left out. Lazy, so a caller that needs a few resolves no more than those.
pub fn named_project_paths(text: &str, cwd: &Path) -> impl Iterator<Item = (String, Resolved)> {
    let root = resolve(".", cwd, None).ok();
    let cwd = cwd.to_path_buf();
    let names = if root.is_some() {
        named_paths(text)
    } else {
        Vec::new()
    };
    names.into_iter().filter_map(move |name| {
        let resolved = resolve(&name, &cwd, None).ok()?;
        let root = root.as_ref()?;
        is_within(resolved.real(), root.real()).then_some((name, resolved))
    })
}

/// The parts to put before the prompt: each named project file, in a `<context>` block.
pub async fn attach_named_files(
    prompt: &[ContentPart],
    cwd: &Path,
    client: &dyn ClientOps,
) -> Vec<ContentPart> {
    let text: String = prompt
        .iter()
        .filter_map(|p| match p {
            ContentPart::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut parts = Vec::new();
    let mut total = 0usize;
    for (name, resolved) in named_project_paths(&text, cwd) {
        if parts.len() == MAX_FILES {
            break;
        }
        // Already attached by the editor (an embedded resource names it).
        if text.contains(&format!("{name}\">")) || looks_secret(&name) {
            continue;
        }
        let small_file = std::fs::metadata(resolved.real())
            .is_ok_and(|m| m.is_file() && m.len() <= MAX_FILE_BYTES);
        if !small_file {
            continue;
        }
        let Ok(body) = client.read_text_file(resolved.path(), None, None).await else {
            continue;
        };
        if total + body.len() > MAX_TOTAL_BYTES || body.contains('\u{0}') {
            continue;
        }
        total += body.len();
        let body = body.trim_end_matches('\n');
        parts.push(ContentPart::text(format!(
            "<context file=\"{name}\">\n{body}\n</context>\n\n"
        )));
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_picked_out_of_prose_and_numbers_urls_and_escapes_are_not() {
        assert_eq!(
            named_paths("What does greet.py do? And `src/lib.rs`, (config/server.yaml)."),
            ["greet.py", "src/lib.rs", "config/server.yaml"]
        );
        assert_eq!(
            named_paths("Is the VERSION right? See Makefile."),
            ["VERSION", "Makefile"]
        );
        assert!(named_paths("pi is 3.14, see https://x.org/a.html or ../etc/passwd").is_empty());
        assert!(named_paths("/etc/passwd ~/.ssh/id_rsa -o.txt").is_empty());
        assert_eq!(named_paths("a.py a.py"), ["a.py"]);
    }

    #[test]
    fn secret_looking_files_are_never_attached() {
        for name in [
            ".env",
            ".env.local",
            "deploy/id_rsa",
            "server.pem",
            "aws_credentials.json",
        ] {
            assert!(looks_secret(name), "{name}");
        }
        assert!(!looks_secret("greet.py"));
    }

    /// The walk both assists share: a name that resolves outside the project through a symlink
    /// is dropped, one inside is kept with where it resolves.
    #[test]
    fn named_project_paths_keep_only_what_resolves_inside_the_project() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("far.py"), "x").unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::write(project.path().join("near.py"), "y").unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("far.py"),
            project.path().join("link.py"),
        )
        .unwrap();
        let found: Vec<String> = named_project_paths(
            "Compare near.py with link.py and missing.py",
            project.path(),
        )
        .map(|(name, _)| name)
        .collect();
        assert_eq!(found, ["near.py", "missing.py"]);
    }
}

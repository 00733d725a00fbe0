//! Hashes no tool showed (the ground_hashes assist). Asked for the sha256 of a file, the 0.5B
//! reads the file and answers with 64 hex digits of its own making; asked for the last
//! commit, a small model makes up a commit id. A checksum or an id cannot be known without a
//! tool, so an answer that gives one that no tool result, and no message of the user, holds
//! gets one nudge to compute it (spelled out as a `bash` call when the request names the
//! algorithm and an existing file). A second answer with an unseen hash keeps it, after a
//! note that tells the user it was not computed.

use std::path::Path;

use hearth_backend::ContentPart;
use hearth_conversation::HistoryEntry;

use super::narrated::{call_format_hint, written_call};
use crate::parse::ResolvedFormat;
use crate::tools::BASH;

/// Fewest hex digits in a run taken for a hash: an MD5 has 32. Shorter runs (a short commit
/// id, a colour, a large number) are too often written from memory or real.
const HASH_DIGITS: usize = 32;

/// Hex digits of a hash quoted back to the model or the user.
const QUOTED_DIGITS: usize = 16;

/// Checksum commands, by the algorithm's name as a request writes it.
const CHECKSUMS: [(&str, &str); 6] = [
    ("sha256", "sha256sum"),
    ("sha512", "sha512sum"),
    ("sha384", "sha384sum"),
    ("sha224", "sha224sum"),
    ("sha1", "sha1sum"),
    ("md5", "md5sum"),
];

/// The first hash in `answer` that no user message and no tool result of `history` holds,
/// shortened for quoting.
pub fn unseen_hash(answer: &str, history: &[HistoryEntry]) -> Option<String> {
    let seen: Vec<String> = history
        .iter()
        .flat_map(|entry| match entry {
            HistoryEntry::User { content } => content
                .iter()
                .filter_map(|part| match part {
                    ContentPart::Text { text } => Some(text.to_lowercase()),
                    ContentPart::Image { .. } => None,
                })
                .collect(),
            HistoryEntry::ToolResult { output, .. } => vec![output.to_lowercase()],
            HistoryEntry::Assistant { .. } => Vec::new(),
        })
        .collect();
    hex_runs(answer)
        .find(|run| {
            let run = run.to_lowercase();
            !seen.iter().any(|text| text.contains(&run))
        })
        .map(quoted)
}

/// Maximal runs of hex digits in `text`, standing as words, of at least [`HASH_DIGITS`], with
/// a letter and a digit both (a run of digits alone is a number).
fn hex_runs(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| {
            word.len() >= HASH_DIGITS
                && word.chars().all(|c| c.is_ascii_hexdigit())
                && word.chars().any(|c| c.is_ascii_digit())
                && word.chars().any(|c| c.is_ascii_alphabetic())
        })
}

fn quoted(run: &str) -> String {
    if run.len() > QUOTED_DIGITS {
        format!("{}…", &run[..QUOTED_DIGITS])
    } else {
        run.to_string()
    }
}

/// The nudge for an answer that gave `hash` unseen: compute it, with the `bash` call spelled
/// out when `request` names a checksum and a file of the project.
pub fn hash_nudge(hash: &str, request: &str, cwd: &Path, format: ResolvedFormat) -> HistoryEntry {
    let how = match checksum_command(request, cwd) {
        Some(command) => spelled_bash(&command, format),
        None => format!(
            "Compute it with the `bash` tool (sha256sum FILE, md5sum FILE, git rev-parse HEAD, \
             as the request needs), {}",
            call_format_hint("bash", format)
        ),
    };
    let text = format!(
        "Your answer gives the hash {hash}, but no tool result above shows it: a checksum or \
         an id cannot be worked out in your head, and one made up misleads me. {how}\nThen \
         answer my request with what it prints."
    );
    HistoryEntry::User {
        content: vec![ContentPart::text(text)],
    }
}

/// The note after an answer that still gives `hash` unseen.
pub fn hash_note(hash: &str) -> String {
    format!(
        "\n\nNote: no tool output of this turn shows the hash {hash}; it was not computed and \
         may well be made up."
    )
}

/// `sha256sum payload.txt` for "the sha256 checksum of payload.txt": the algorithm the request
/// names and the first of its words that is a file in the project (a relative path that
/// stays in it, links followed).
fn checksum_command(request: &str, cwd: &Path) -> Option<String> {
    let words = request_words(request);
    let (_, program) = CHECKSUMS.iter().find(|(name, program)| {
        words.iter().any(|w| {
            let w = w.to_lowercase();
            w == *name || w == *program || w.replace('-', "") == *name
        })
    })?;
    // The file as the request spells it, case and all.
    let file = words.into_iter().find(|w| {
        !w.is_empty()
            && !w.starts_with(['-', '/'])
            && w.chars().all(|c| c.is_alphanumeric() || "._-/".contains(c))
            && !w.split('/').any(|part| part == "..")
            && in_project(cwd, w)
    })?;
    Some(format!("{program} {file}"))
}

/// The request's words, quotes and closing punctuation dropped.
fn request_words(request: &str) -> Vec<&str> {
    request
        .split(|c: char| c.is_whitespace() || c == ',' || c == '`' || c == '"' || c == '\'')
        .map(|w| w.trim_end_matches(['?', '.', '!', ':', ';']))
        .collect()
}

/// Whether `relative` is a file under `cwd`, once links are followed.
fn in_project(cwd: &Path, relative: &str) -> bool {
    let (Ok(root), Ok(file)) = (cwd.canonicalize(), cwd.join(relative).canonicalize()) else {
        return false;
    };
    file.starts_with(&root) && file.is_file()
}

fn spelled_bash(command: &str, format: ResolvedFormat) -> String {
    let call = written_call(BASH, &serde_json::json!({ "command": command }), format);
    match format {
        ResolvedFormat::Native => format!("Make {call}."),
        ResolvedFormat::Hermes | ResolvedFormat::Xml => {
            format!("Reply now with only this call:\n{call}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_conversation::ToolCallId;

    const SHA: &str = "c94823853a842e33fa951b13264aaec549462989689dc4415f9c7405be0c7f5c";

    fn user(text: &str) -> HistoryEntry {
        HistoryEntry::User {
            content: vec![ContentPart::text(text)],
        }
    }

    fn result(output: &str) -> HistoryEntry {
        HistoryEntry::ToolResult {
            call_id: ToolCallId::new("c1"),
            name: "bash".into(),
            output: output.into(),
            is_error: false,
        }
    }

    #[test]
    fn a_hash_no_tool_showed_is_unseen_and_one_a_tool_printed_is_not() {
        let asked = [user("What is the sha256 checksum of payload.txt?")];
        let answer = format!("The checksum is `{SHA}`.");
        assert_eq!(
            unseen_hash(&answer, &asked).as_deref(),
            Some("c94823853a842e33…")
        );
        let computed = [
            user("What is the sha256 checksum of payload.txt?"),
            result(&format!("{}  payload.txt\n", SHA.to_uppercase())),
        ];
        assert_eq!(unseen_hash(&answer, &computed), None);
        // The user gave it: quoting it back is no invention.
        assert_eq!(
            unseen_hash(&answer, &[user(&format!("Is {SHA} right?"))]),
            None
        );
        // The model's own earlier words prove nothing.
        let said = [
            user("sha256 of payload.txt?"),
            HistoryEntry::Assistant {
                text: SHA.into(),
                reasoning: None,
                tool_calls: Vec::new(),
            },
        ];
        assert!(unseen_hash(&answer, &said).is_some());
    }

    #[test]
    fn only_long_mixed_hex_words_are_hashes() {
        let none = [user("hi")];
        // Too short, digits only, part of a longer word, or no digit.
        for answer in [
            "commit 4e7b9f0 fixed it",
            "12345678901234567890123456789012345678",
            "x4e7b9f0a8c3d4e7b9f0a8c3d4e7b9f0a8c3d4e7bzz",
            "abcdefabcdefabcdefabcdefabcdefabcdef",
        ] {
            assert_eq!(unseen_hash(answer, &none), None, "{answer}");
        }
        assert!(unseen_hash("id: 0123456789abcdef0123456789abcdef.", &none).is_some());
    }

    #[test]
    fn the_nudge_spells_out_the_checksum_of_a_named_file_that_exists() {
        let project = tempfile::tempdir().unwrap();
        std::fs::write(project.path().join("payload.txt"), "x").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", project.path().join("link.txt")).unwrap();
        let roots = project.path();
        let text = |entry: HistoryEntry| match entry {
            HistoryEntry::User { content } => match &content[0] {
                ContentPart::Text { text } => text.clone(),
                ContentPart::Image { .. } => unreachable!(),
            },
            _ => unreachable!(),
        };
        let asked = "What is the SHA-256 checksum of payload.txt?";
        let nudge = text(hash_nudge("ab…", asked, roots, ResolvedFormat::Hermes));
        assert!(
            nudge.contains(r#"{"name": "bash", "arguments": {"command":"sha256sum payload.txt"}}"#),
            "{nudge}"
        );
        // A file that is not there, or one outside the project, is not spelled out.
        for asked in [
            "What is the md5 of missing.txt?",
            "What is the md5 of ../outside.txt?",
            "What is the md5 of /etc/hostname?",
            "What is the md5 of link.txt?",
        ] {
            let nudge = text(hash_nudge("ab…", asked, roots, ResolvedFormat::Hermes));
            assert!(nudge.contains("sha256sum FILE"), "{asked}: {nudge}");
        }
    }
}

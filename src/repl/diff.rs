//! File changes for the terminal: a `+N -M` summary for the tool card, the unified diff for
//! `/diff`.

use std::path::Path;

use similar::{ChangeTag, TextDiff};

/// Lines added and removed by one change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiffSummary {
    pub added: usize,
    pub removed: usize,
}

impl std::fmt::Display for DiffSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "+{} -{}", self.added, self.removed)
    }
}

/// Counts the added and removed lines; a new file (`old` is `None`) is all additions.
pub fn summarize(old: Option<&str>, new: &str) -> DiffSummary {
    let diff = TextDiff::from_lines(old.unwrap_or_default(), new);
    let mut summary = DiffSummary::default();
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => summary.added += 1,
            ChangeTag::Delete => summary.removed += 1,
            ChangeTag::Equal => {}
        }
    }
    summary
}

/// The unified diff of one change, with `--- a/path` / `+++ b/path` headers (`/dev/null` for
/// a new file; an absolute path is shown as it is).
pub fn unified(path: &Path, old: Option<&str>, new: &str) -> String {
    let side = |prefix: &str| {
        if path.is_absolute() {
            path.display().to_string()
        } else {
            format!("{prefix}{}", path.display())
        }
    };
    let old_name = match old {
        Some(_) => side("a/"),
        None => "/dev/null".to_owned(),
    };
    let new_name = side("b/");
    TextDiff::from_lines(old.unwrap_or_default(), new)
        .unified_diff()
        .context_radius(3)
        .header(&old_name, &new_name)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_counts_added_and_removed_lines() {
        assert_eq!(summarize(None, "a\nb\nc\n").to_string(), "+3 -0");
        assert_eq!(
            summarize(Some("a\nb\nc\n"), "a\nB\nc\nd\n").to_string(),
            "+2 -1"
        );
        assert_eq!(summarize(Some("same\n"), "same\n").to_string(), "+0 -0");
    }

    #[test]
    fn unified_diff_has_headers_and_marked_lines() {
        let text = unified(Path::new("src/x.rs"), Some("a\nb\n"), "a\nc\n");
        assert!(
            text.starts_with("--- a/src/x.rs\n+++ b/src/x.rs\n@@"),
            "{text}"
        );
        assert!(text.contains("\n-b\n+c\n"), "{text}");
        let created = unified(Path::new("new.txt"), None, "hi\n");
        assert!(
            created.starts_with("--- /dev/null\n+++ b/new.txt\n"),
            "{created}"
        );
        let outside = unified(Path::new("/etc/x"), Some("a\n"), "b\n");
        assert!(outside.starts_with("--- /etc/x\n+++ /etc/x\n"), "{outside}");
    }
}

//! The directory walk `glob` and `grep` share: `.gitignore`, `.ignore` and global git excludes
//! respected (also outside a git repository), hidden files skipped, symlinks not followed.

use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};

use super::handler::ToolError;

/// A walker over `root` with hearth's rules.
pub fn walker(root: &Path) -> ignore::WalkBuilder {
    let mut builder = ignore::WalkBuilder::new(root);
    // Projects that are not (yet) git repositories still mean their .gitignore.
    builder.require_git(false).follow_links(false);
    builder
}

/// A compiled glob. Patterns without a `/` match file names at any depth (`*.rs`); patterns
/// with one match the path relative to the search root (`src/**/*.rs`).
pub struct PathGlob {
    matcher: GlobMatcher,
    name_only: bool,
}

impl PathGlob {
    pub fn new(pattern: &str) -> Result<Self, ToolError> {
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| ToolError::Model(format!("invalid glob pattern `{pattern}`: {e}")))?;
        Ok(Self {
            matcher: glob.compile_matcher(),
            name_only: !pattern.contains('/'),
        })
    }

    /// Whether `path` (below `root`) matches.
    pub fn is_match(&self, root: &Path, path: &Path) -> bool {
        if self.name_only {
            path.file_name().is_some_and(|n| self.matcher.is_match(n))
        } else {
            self.matcher
                .is_match(path.strip_prefix(root).unwrap_or(path))
        }
    }
}

/// Checks that a search root exists, with a clear error when not.
pub async fn check_root(root: &Path) -> Result<(), ToolError> {
    match tokio::fs::metadata(root).await {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(ToolError::Model(format!("not found: {}", root.display())))
        }
        Err(e) => Err(ToolError::Model(format!(
            "cannot search {}: {e}",
            root.display()
        ))),
    }
}

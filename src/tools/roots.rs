//! A session's roots: the directories its tools may read freely and (mode permitting) write
//! without asking about the place. They are the session's working directory, any further
//! directories the client named for the session (ACP `additionalDirectories`), and the
//! session's plan directory. Everything else on the disk is outside: reads there ask, writes
//! there ask in every mode but bypass, and no "always allow" reaches there.

use std::path::Path;

use super::paths::{self, Resolved};

/// The directories a session's tools work in, resolved (symlinks followed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
    cwd: Resolved,
    plan_dir: Resolved,
    extra: Vec<Resolved>,
}

impl Roots {
    pub fn new(cwd: Resolved, plan_dir: Resolved, extra: Vec<Resolved>) -> Self {
        Self {
            cwd,
            plan_dir,
            extra,
        }
    }

    /// The working directory.
    pub fn cwd(&self) -> &Resolved {
        &self.cwd
    }

    /// The plan directory: the one place plan mode writes.
    pub fn plan_dir(&self) -> &Resolved {
        &self.plan_dir
    }

    /// Whether a real (symlink-free) path lies inside one of the roots. Pass
    /// [`Resolved::real`]: a link inside the project that points outside it is outside.
    pub fn contains(&self, real: &Path) -> bool {
        std::iter::once(&self.cwd)
            .chain(std::iter::once(&self.plan_dir))
            .chain(&self.extra)
            .any(|root| paths::is_within(real, root.real()))
    }

    /// Whether every path lies inside the roots (true for none).
    pub fn contain_all(&self, resolved: &[Resolved]) -> bool {
        resolved.iter().all(|p| self.contains(p.real()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contains_the_cwd_the_plan_dir_and_extra_dirs_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for sub in ["proj/src", "plans/p", "lib", "outside"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::os::unix::fs::symlink(root.join("outside"), root.join("proj/link")).unwrap();
        let resolved = |p: &str| Resolved::from_absolute(&root.join(p)).unwrap();
        let roots = Roots::new(resolved("proj"), resolved("plans/p"), vec![resolved("lib")]);
        let inside = ["proj", "proj/src/new.rs", "plans/p/plan.md", "lib/a/b.rs"];
        for p in inside {
            assert!(roots.contains(resolved(p).real()), "{p}");
        }
        let outside = [
            "outside/x",
            "proj/link/x",
            "proj/../outside",
            "projx/a",
            "plans",
        ];
        for p in outside {
            assert!(!roots.contains(resolved(p).real()), "{p}");
        }
        assert!(roots.contain_all(&[]));
        assert!(!roots.contain_all(&[resolved("proj/a"), resolved("outside/b")]));
    }
}

//! Path resolution and confinement. Tools resolve every path the model names here, once, and
//! then use only the result: [`Resolved::path`] for I/O and for what the user and model see,
//! [`Resolved::real`] (symlinks followed) for the policy's confinement checks. Because the I/O
//! path has no `.`/`..` left, the OS reaches exactly the file whose real path was checked.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::ErrorKind;
use std::path::{Component, Path, PathBuf};

/// How many symbolic links one resolution may follow (Linux's own limit is 40).
const MAX_LINKS: usize = 40;

/// Why a path could not be resolved. Tools report it to the model; the turn goes on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The model passed an empty path: tell it to name a file.
    #[error("the path is empty")]
    Empty,
    /// The path contains a NUL byte, which no file name can hold: tell the model.
    #[error("the path contains a NUL byte")]
    Nul,
    /// `~user/…`: other users' home directories are not expanded; tell the model.
    #[error("`{0}`: only `~` and `~/…` are expanded, not `~user`")]
    OtherUser(String),
    /// `~` or `$HOME` was used but the home directory is unknown: tell the model.
    #[error("`{0}`: the home directory is not known")]
    NoHome(String),
    /// A symlink loop, a permission error or a file used as a directory: tell the model.
    #[error("cannot resolve {path}: {reason}")]
    Unresolvable { path: PathBuf, reason: String },
}

/// A path as a tool uses it: absolute and normalised, plus its real location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    path: PathBuf,
    real: PathBuf,
}

impl Resolved {
    /// The absolute, normalised path (no `.` or `..`): use it for I/O and in messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The same location with every symlink followed, for confinement checks.
    pub fn real(&self) -> &Path {
        &self.real
    }

    /// Resolves a path that is already absolute (a session cwd, a plan directory). A relative
    /// path is refused: resolving it against the process's cwd would check the wrong place.
    pub fn from_absolute(path: &Path) -> Result<Self, PathError> {
        if !path.is_absolute() {
            return Err(PathError::Unresolvable {
                path: path.to_path_buf(),
                reason: "not an absolute path (is the session cwd relative?)".into(),
            });
        }
        let path = normalize(path);
        let real = real_path(&path)?;
        Ok(Self { path, real })
    }
}

/// Resolves what the model wrote: `~`, `~/…`, `$HOME`, `${HOME}` expanded, relative paths
/// joined to `cwd`, `.`/`..` folded, symlinks followed for [`Resolved::real`].
pub fn resolve(raw: &str, cwd: &Path, home: Option<&Path>) -> Result<Resolved, PathError> {
    let expanded = expand(raw, cwd, home)?;
    Resolved::from_absolute(&expanded)
}

/// Expands `~` and `$HOME` and makes `raw` absolute against `cwd`, without normalising.
pub fn expand(raw: &str, cwd: &Path, home: Option<&Path>) -> Result<PathBuf, PathError> {
    if raw.is_empty() {
        return Err(PathError::Empty);
    }
    if raw.contains('\0') {
        return Err(PathError::Nul);
    }
    let home_rest = if raw == "~" || raw == "$HOME" || raw == "${HOME}" {
        Some("")
    } else if let Some(rest) = raw.strip_prefix("~/") {
        Some(rest)
    } else if raw.starts_with('~') {
        return Err(PathError::OtherUser(raw.to_owned()));
    } else {
        raw.strip_prefix("$HOME/")
            .or_else(|| raw.strip_prefix("${HOME}/"))
    };
    match home_rest {
        Some(rest) => {
            let home = home.ok_or_else(|| PathError::NoHome(raw.to_owned()))?;
            Ok(home.join(rest))
        }
        None => Ok(cwd.join(raw)),
    }
}

/// Folds `.` and `..` lexically (`..` at the root stays at the root).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Whether `path` is `dir` or below it, comparing whole components (`/a/bc` is not in `/a/b`).
/// Pass [`Resolved::real`] paths so symlinks cannot fool it.
pub fn is_within(path: &Path, dir: &Path) -> bool {
    path.starts_with(dir)
}

/// Follows every symlink in an absolute path, component by component, the way the kernel
/// would; the part that does not exist yet is appended as written. Dangling symlinks are
/// followed too, since writing through one creates its target.
pub fn real_path(path: &Path) -> Result<PathBuf, PathError> {
    let unresolvable = |reason: String| PathError::Unresolvable {
        path: path.to_path_buf(),
        reason,
    };
    let mut queue: VecDeque<OsString> = VecDeque::new();
    let mut out = PathBuf::from("/");
    push_components(path, &mut queue, &mut out);
    let mut links = 0usize;
    let mut missing = false;
    while let Some(part) = queue.pop_front() {
        if part == ".." {
            out.pop();
            continue;
        }
        out.push(&part);
        if missing {
            continue;
        }
        match std::fs::symlink_metadata(&out) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(unresolvable("too many levels of symbolic links".into()));
                }
                let target = std::fs::read_link(&out).map_err(|e| unresolvable(e.to_string()))?;
                out.pop();
                let mut front = VecDeque::new();
                push_components(&target, &mut front, &mut out);
                front.extend(queue);
                queue = front;
            }
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => missing = true,
            Err(e) => return Err(unresolvable(e.to_string())),
        }
    }
    Ok(out)
}

/// Queues `path`'s components; an absolute `path` restarts `out` at the root.
fn push_components(path: &Path, queue: &mut VecDeque<OsString>, out: &mut PathBuf) {
    for component in path.components() {
        match component {
            Component::RootDir => *out = PathBuf::from("/"),
            Component::Prefix(_) | Component::CurDir => {}
            Component::ParentDir => queue.push_back(OsString::from("..")),
            Component::Normal(name) => queue.push_back(name.to_os_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expand_table() {
        let cwd = Path::new("/proj");
        let home = Some(Path::new("/home/u"));
        let cases: &[(&str, Result<&str, PathError>)] = &[
            ("src/main.rs", Ok("/proj/src/main.rs")),
            ("/etc/hosts", Ok("/etc/hosts")),
            ("~", Ok("/home/u/")),
            ("~/notes.md", Ok("/home/u/notes.md")),
            ("$HOME/a", Ok("/home/u/a")),
            ("${HOME}/a", Ok("/home/u/a")),
            ("$HOME", Ok("/home/u/")),
            ("$HOMEX/a", Ok("/proj/$HOMEX/a")),
            ("a/~/b", Ok("/proj/a/~/b")),
            ("~root/.ssh", Err(PathError::OtherUser("~root/.ssh".into()))),
            ("", Err(PathError::Empty)),
            ("a\0b", Err(PathError::Nul)),
        ];
        for (raw, want) in cases {
            let got = expand(raw, cwd, home);
            let want = want.clone().map(PathBuf::from);
            assert_eq!(got, want, "{raw}");
        }
        assert_eq!(
            expand("~/x", cwd, None),
            Err(PathError::NoHome("~/x".into()))
        );
    }

    #[test]
    fn normalize_table() {
        let cases = [
            ("/a/./b/../c", "/a/c"),
            ("/../../x", "/x"),
            ("/a/b/../../..", "/"),
            ("/a//b/", "/a/b"),
        ];
        for (raw, want) in cases {
            assert_eq!(normalize(Path::new(raw)), PathBuf::from(want), "{raw}");
        }
    }

    #[test]
    fn is_within_compares_components() {
        assert!(is_within(Path::new("/a/b/c"), Path::new("/a/b")));
        assert!(is_within(Path::new("/a/b"), Path::new("/a/b")));
        assert!(!is_within(Path::new("/a/bc"), Path::new("/a/b")));
        assert!(!is_within(Path::new("/a"), Path::new("/a/b")));
    }

    #[test]
    fn real_path_follows_links_and_keeps_missing_tail() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("real/sub")).unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
        std::os::unix::fs::symlink("real/sub", root.join("rel")).unwrap();
        std::os::unix::fs::symlink(root.join("nowhere/x"), root.join("dangling")).unwrap();
        std::os::unix::fs::symlink("loop", root.join("loop")).unwrap();
        let cases = [
            ("link/sub/new.txt", root.join("real/sub/new.txt")),
            ("rel/../a", root.join("real/a")),
            ("dangling/f", root.join("nowhere/x/f")),
            ("missing/dir/f", root.join("missing/dir/f")),
        ];
        for (rel, want) in cases {
            assert_eq!(real_path(&root.join(rel)).unwrap(), want, "{rel}");
        }
        assert!(matches!(
            real_path(&root.join("loop/x")),
            Err(PathError::Unresolvable { .. })
        ));
    }

    #[test]
    fn resolve_gives_io_path_and_real_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(root.join("real")).unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
        assert!(matches!(
            resolve("f.txt", Path::new("relative/cwd"), None),
            Err(PathError::Unresolvable { .. })
        ));
        let r = resolve("./link/../link/f.txt", &root, None).unwrap();
        assert_eq!(r.path(), root.join("link/f.txt"));
        assert_eq!(r.real(), root.join("real/f.txt"));
    }
}

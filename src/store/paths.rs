//! Where things live under the data root:
//!
//! ```text
//! <root>/sessions/<project-key>/<session-id>.jsonl   one file per session
//! <root>/blobs/<sha256>                              image bytes, stored once
//! <root>/locks/<session-id>.lock                     held by the one process writing it
//! ```
//!
//! The root is `$HEARTH_DATA_DIR`, else `<platform data dir>/hearth` (`$XDG_DATA_HOME/hearth`,
//! `~/.local/share/hearth` on Linux).

use std::path::{Path, PathBuf};

use hearth_conversation::SessionId;
use sha2::{Digest, Sha256};

use super::error::StoreError;
use super::id::validate_session_id;

/// The environment variable that overrides the data root.
pub const DATA_DIR_ENV: &str = "HEARTH_DATA_DIR";
const SESSIONS: &str = "sessions";
const BLOBS: &str = "blobs";
const EXTENSION: &str = "jsonl";
/// Longest basename kept in a project key; the hash keeps keys unique anyway.
const MAX_BASENAME: usize = 40;

/// Resolves the data root: `HEARTH_DATA_DIR` (must be absolute), else the platform data
/// directory joined with `hearth`. `env` reads environment variables (passed in so tests need
/// not touch the process environment).
pub fn data_root(env: &dyn Fn(&str) -> Option<String>) -> Result<PathBuf, StoreError> {
    if let Some(dir) = env(DATA_DIR_ENV).filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        if !dir.is_absolute() {
            return Err(StoreError::NoDataDir(format!(
                "{DATA_DIR_ENV}={} is not an absolute path",
                dir.display()
            )));
        }
        return Ok(dir);
    }
    dirs::data_dir().map(|d| d.join("hearth")).ok_or_else(|| {
        StoreError::NoDataDir(format!("no platform data directory; set {DATA_DIR_ENV}"))
    })
}

/// Creates `dir` and any missing parents as private directories (0700), and makes `dir`
/// itself private if it already existed with wider permissions (a data root made by an
/// older version). Sessions hold everything the model read, plans what the user planned:
/// neither is for other users of the machine.
pub fn private_dir_all(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let meta = std::fs::metadata(dir)?;
    // SAFETY: geteuid has no preconditions and touches no memory.
    let mine = meta.uid() == unsafe { libc::geteuid() };
    if mine && meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// The cwd as the store keys it: canonical (symlinks and `..` resolved) when it exists, else
/// as given, so a project reached through two paths is one project.
pub fn canonical_cwd(cwd: &Path) -> PathBuf {
    std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf())
}

/// A directory name for a project, stable across runs and machines' hash seeds: the cwd's
/// basename (for people browsing the directory) plus the first 16 hex digits of the SHA-256 of
/// the canonical path (for uniqueness). `cwd` must already be canonical.
pub fn project_key(cwd: &Path) -> String {
    let base: String = cwd
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_else(|| "root".into())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_BASENAME)
        .collect();
    let digest = Sha256::digest(cwd.as_os_str().as_encoded_bytes());
    format!("{base}-{}", &hex(&digest)[..16])
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// The paths under one data root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    root: PathBuf,
}

impl Layout {
    pub(crate) fn new(root: PathBuf) -> Self {
        Self { root }
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    pub(crate) fn sessions_dir(&self) -> PathBuf {
        self.root.join(SESSIONS)
    }

    pub(crate) fn locks_dir(&self) -> PathBuf {
        self.root.join("locks")
    }

    pub(crate) fn blobs_dir(&self) -> PathBuf {
        self.root.join(BLOBS)
    }

    /// The directory of one project; `cwd` must be canonical.
    pub(crate) fn project_dir(&self, cwd: &Path) -> PathBuf {
        self.sessions_dir().join(project_key(cwd))
    }

    /// The file of one session. The id is validated again here, whatever its origin: this is
    /// the one place ids become paths.
    pub(crate) fn session_file(
        &self,
        project_dir: &Path,
        id: &SessionId,
    ) -> Result<PathBuf, StoreError> {
        let id = validate_session_id(id.as_str())?;
        Ok(project_dir.join(format!("{id}.{EXTENSION}")))
    }

    /// The session id a file name stands for, if it is a session file.
    pub(crate) fn session_id_of(path: &Path) -> Option<SessionId> {
        if path.extension()? != EXTENSION {
            return None;
        }
        validate_session_id(path.file_stem()?.to_str()?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_dirs_are_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let deep = tmp.path().join("a/b/c");
        private_dir_all(&deep).unwrap();
        assert_eq!(mode(&deep), 0o700);
        assert_eq!(mode(&tmp.path().join("a")), 0o700);
        let old = tmp.path().join("old");
        std::fs::create_dir(&old).unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o755)).unwrap();
        private_dir_all(&old).unwrap();
        assert_eq!(mode(&old), 0o700);
    }

    #[test]
    fn data_dir_override_must_be_absolute() {
        let env = |k: &str| (k == DATA_DIR_ENV).then(|| "/srv/hearth".to_string());
        assert_eq!(data_root(&env).unwrap(), PathBuf::from("/srv/hearth"));
        let relative = |k: &str| (k == DATA_DIR_ENV).then(|| "data".to_string());
        assert!(matches!(
            data_root(&relative),
            Err(StoreError::NoDataDir(_))
        ));
    }

    #[test]
    fn project_key_is_stable_readable_and_distinct() {
        let a = project_key(Path::new("/home/ann/code/my app"));
        assert_eq!(a, project_key(Path::new("/home/ann/code/my app")));
        assert!(a.starts_with("my_app-"), "{a}");
        assert_eq!(a.len(), "my_app-".len() + 16);
        // Same basename, different project.
        assert_ne!(a, project_key(Path::new("/tmp/my app")));
        assert!(project_key(Path::new("/")).starts_with("root-"));
        // The first 16 hex digits of SHA-256("/x"): fixed, so keys survive upgrades.
        assert_eq!(project_key(Path::new("/x")), "x-b3d1db318671a024");
    }

    #[test]
    fn session_file_names_only_valid_ids() {
        let layout = Layout::new(PathBuf::from("/data"));
        let dir = layout.project_dir(Path::new("/p"));
        let ok = layout.session_file(&dir, &SessionId::new("abc-1")).unwrap();
        assert_eq!(ok, dir.join("abc-1.jsonl"));
        assert_eq!(Layout::session_id_of(&ok), Some(SessionId::new("abc-1")));
        for bad in ["../../etc/passwd", "", "a/b"] {
            assert!(
                layout.session_file(&dir, &SessionId::new(bad)).is_err(),
                "{bad}"
            );
        }
        assert_eq!(Layout::session_id_of(Path::new("/d/x.tmp")), None);
    }
}

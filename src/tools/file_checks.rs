//! Checks a tool makes on a file before it reads or changes it, with `stat` only (which never
//! blocks, not even on a FIFO): special files are refused up front, and files too large to
//! hold whole for an edit and its diff are refused with a clear reason.

use std::path::Path;

use super::handler::ToolError;
use crate::host::file_io::special_kind;

/// The largest file `write_file` and `edit_file` change: both hold the old and new text and
/// a diff of the two.
pub const EDIT_MAX_BYTES: u64 = 4 * 1024 * 1024;

/// For a file a tool is about to replace or edit: `Ok(false)` when it does not exist yet,
/// `Ok(true)` when it is a regular file of at most [`EDIT_MAX_BYTES`], else the reason.
pub async fn editable(path: &Path, tool: &str) -> Result<bool, ToolError> {
    let meta = match tokio::fs::metadata(path).await {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(ToolError::Model(format!("{tool}: {}: {e}", path.display()))),
    };
    if meta.is_dir() {
        return Err(ToolError::Model(format!(
            "{} is a directory; give a file path",
            path.display()
        )));
    }
    if let Some(what) = special_kind(meta.file_type()) {
        return Err(ToolError::Model(format!(
            "{tool}: {} is {what}; only regular files can be written",
            path.display()
        )));
    }
    if meta.len() > EDIT_MAX_BYTES {
        return Err(ToolError::Model(format!(
            "{tool}: {} is too large to change with this tool ({} bytes; the limit is {} \
             bytes). Use a command for files this size.",
            path.display(),
            meta.len(),
            EDIT_MAX_BYTES
        )));
    }
    Ok(true)
}

/// For a file a tool is about to read: its size, or the reason it cannot be read (a
/// directory, with the tool to use instead; a special file, by its kind). A missing file
/// passes as `None`: the read says so.
pub async fn readable(path: &Path, tool: &str) -> Result<Option<u64>, ToolError> {
    let Ok(meta) = tokio::fs::metadata(path).await else {
        return Ok(None);
    };
    if meta.is_dir() {
        return Err(ToolError::Model(format!(
            "{} is a directory; use list_dir to see what it holds",
            path.display()
        )));
    }
    if let Some(what) = special_kind(meta.file_type()) {
        return Err(ToolError::Model(format!(
            "{tool}: {} is {what}; only regular files can be read",
            path.display()
        )));
    }
    Ok(Some(meta.len()))
}

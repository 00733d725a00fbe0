//! Reading a session file back. Damage is local: a line that cannot be read is skipped and
//! reported with its file and line number, and everything before and after it still loads.

use std::path::{Path, PathBuf};

use super::blob::BlobStore;
use super::error::StoreError;
use super::record::{FORMAT_VERSION, Header, Record};
use super::warning::{LoadProblem, LoadWarning};
use super::wire::{WireRecord, from_wire};

/// A session file, read.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSession {
    pub path: PathBuf,
    pub header: Header,
    /// Every readable record after the header, in file order.
    pub records: Vec<Record>,
    /// What was skipped or patched, for the log and the user.
    pub warnings: Vec<LoadWarning>,
}

/// Reads `path`. `expected_id` is the id the file name stands for.
pub(crate) fn load_file(
    path: &Path,
    expected_id: Option<&hearth_conversation::SessionId>,
    blobs: &BlobStore,
) -> Result<LoadedSession, StoreError> {
    let bytes = std::fs::read(path).map_err(|e| StoreError::io(path, e))?;
    let mut lines = split_lines(&bytes);
    let mut warnings = Vec::new();
    let mut warn = |line, problem| {
        warnings.push(LoadWarning {
            file: path.to_path_buf(),
            line,
            problem,
        })
    };
    let mut header = read_header(path, lines.next())?;
    if let Some(id) = expected_id
        && *id != header.id
    {
        warn(
            1,
            LoadProblem::IdMismatch {
                header_id: header.id.to_string(),
            },
        );
        header.id = id.clone();
    }
    let mut records = Vec::new();
    for (number, line, terminated) in lines {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<WireRecord>(line) {
            Ok(wire) => {
                let mut problems = Vec::new();
                match from_wire(wire, blobs, &mut problems) {
                    Some(record) => records.push(record),
                    None => warn(number, LoadProblem::ExtraHeader),
                }
                problems.into_iter().for_each(|p| warn(number, p));
            }
            Err(_) if !terminated => warn(number, LoadProblem::TornLastRecord),
            Err(e) => warn(number, LoadProblem::Corrupt(e.to_string())),
        }
    }
    Ok(LoadedSession {
        path: path.to_path_buf(),
        header,
        records,
        warnings,
    })
}

/// Line 1 must be a header of a version this hearth reads.
pub(super) fn read_header(
    path: &Path,
    first: Option<(usize, &[u8], bool)>,
) -> Result<Header, StoreError> {
    let corrupt = |problem: String| StoreError::Corrupt {
        path: path.to_path_buf(),
        line: 1,
        problem,
    };
    let (_, line, _) = first.ok_or_else(|| corrupt("empty file".to_string()))?;
    let header = match serde_json::from_slice::<WireRecord>(line) {
        Ok(WireRecord::Header(header)) => header,
        Ok(_) => return Err(corrupt("the first record is not a header".to_string())),
        Err(e) => return Err(corrupt(format!("unreadable header: {e}"))),
    };
    if header.version > FORMAT_VERSION {
        return Err(StoreError::UnsupportedVersion {
            path: path.to_path_buf(),
            version: header.version,
            supported: FORMAT_VERSION,
        });
    }
    Ok(header)
}

/// `(1-based line number, line without its newline, whether a newline ended it)`.
pub(super) fn split_lines(bytes: &[u8]) -> impl Iterator<Item = (usize, &[u8], bool)> {
    let mut rest = bytes;
    let mut number = 0;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        number += 1;
        Some(match rest.iter().position(|&b| b == b'\n') {
            Some(end) => {
                let line = &rest[..end];
                rest = &rest[end + 1..];
                (number, line, true)
            }
            None => {
                let line = rest;
                rest = &[];
                (number, line, false)
            }
        })
    })
}

#[cfg(test)]
#[path = "load_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "load_prop_tests.rs"]
mod prop_tests;

//! Files on this machine, read and written the way untrusted paths require. A path the model
//! names may be a FIFO (opening it waits for a writer forever), a device (`/dev/zero` never
//! ends) or a socket; a regular file may be a gigabyte. So every open is non-blocking and
//! checked on the opened descriptor (no window between check and use), only regular files are
//! read or written, and no read holds more than a bounded slice in memory.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::ClientOpsError;

/// The largest file read whole (when no line range is asked for).
pub const WHOLE_READ_MAX: u64 = 16 * 1024 * 1024;
/// The most bytes a line-range read returns; the caller caps what it shows far below this.
pub const SLICE_READ_MAX: u64 = 16 * 1024 * 1024;

/// Opens a regular file for reading, without blocking on a FIFO.
pub fn open_regular(path: &Path) -> Result<File, ClientOpsError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| io_error(path, e))?;
    ensure_regular(path, &file)?;
    Ok(file)
}

/// Reads a text file: whole (up to [`WHOLE_READ_MAX`]) or lines `line..line+limit` (1-based;
/// at most [`SLICE_READ_MAX`] bytes, without reading the rest into memory).
pub fn read_text(
    path: &Path,
    line: Option<u32>,
    limit: Option<u32>,
) -> Result<String, ClientOpsError> {
    let file = open_regular(path)?;
    let bytes = if line.is_none() && limit.is_none() {
        let size = file.metadata().map_err(|e| io_error(path, e))?.len();
        if size > WHOLE_READ_MAX {
            return Err(ClientOpsError::Failed(format!(
                "{} is too large to read whole ({size} bytes; the limit is {WHOLE_READ_MAX}); \
                 read it a slice at a time",
                path.display()
            )));
        }
        let mut bytes = Vec::new();
        file.take(WHOLE_READ_MAX)
            .read_to_end(&mut bytes)
            .map_err(|e| io_error(path, e))?;
        bytes
    } else {
        read_lines(path, file, line.unwrap_or(1), limit)?
    };
    into_text(path, bytes)
}

/// Lines `first..first+limit` (1-based), skipping the ones before without keeping them.
/// Starting past the end is an error, as in Zed.
fn read_lines(
    path: &Path,
    file: File,
    first: u32,
    limit: Option<u32>,
) -> Result<Vec<u8>, ClientOpsError> {
    let past_end = |total: u32| {
        ClientOpsError::Failed(format!(
            "line {first} is past the end of the file ({total} lines)"
        ))
    };
    let mut reader = BufReader::new(file);
    for skipped in 1..first.max(1) {
        let read = reader.skip_until(b'\n').map_err(|e| io_error(path, e))?;
        if read == 0 {
            return Err(past_end(skipped - 1));
        }
    }
    let mut out = Vec::new();
    let mut lines = 0u32;
    while limit.is_none_or(|limit| lines < limit) {
        let budget = SLICE_READ_MAX.saturating_sub(out.len() as u64);
        if budget == 0 {
            break;
        }
        let read = (&mut reader)
            .take(budget)
            .read_until(b'\n', &mut out)
            .map_err(|e| io_error(path, e))?;
        if read == 0 {
            break;
        }
        lines += 1;
    }
    if lines == 0 && first > 1 {
        return Err(past_end(first - 1));
    }
    Ok(out)
}

/// The bytes as text. A read cut inside a character (at a byte cap) drops the partial
/// character; anything else that is not UTF-8 is refused as binary.
fn into_text(path: &Path, bytes: Vec<u8>) -> Result<String, ClientOpsError> {
    match String::from_utf8(bytes) {
        Ok(text) => Ok(text),
        Err(err) if err.utf8_error().error_len().is_none() => {
            let valid = err.utf8_error().valid_up_to();
            let mut bytes = err.into_bytes();
            bytes.truncate(valid);
            Ok(String::from_utf8_lossy(&bytes).into_owned())
        }
        Err(_) => Err(ClientOpsError::Failed(format!(
            "{} is not UTF-8 text (a binary file?)",
            path.display()
        ))),
    }
}

/// Writes a whole text file, creating it if needed. Refuses anything that is not a regular
/// file (a FIFO, a device) before writing a byte.
pub fn write_text(path: &Path, content: &str) -> Result<(), ClientOpsError> {
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| io_error(path, e))?;
    ensure_regular(path, &file)?;
    file.set_len(0).map_err(|e| io_error(path, e))?;
    file.write_all(content.as_bytes())
        .and_then(|()| file.flush())
        .map_err(|e| io_error(path, e))
}

/// Refuses an opened file that is not a regular file, naming what it is.
fn ensure_regular(path: &Path, file: &File) -> Result<(), ClientOpsError> {
    let kind = file.metadata().map_err(|e| io_error(path, e))?.file_type();
    match special_kind(kind) {
        None => Ok(()),
        Some(what) => Err(ClientOpsError::Failed(format!(
            "{} is {what}; only regular files are read or written",
            path.display()
        ))),
    }
}

/// What a file that is not a regular file is, in words; `None` for a regular file.
pub fn special_kind(kind: std::fs::FileType) -> Option<&'static str> {
    Some(if kind.is_file() {
        return None;
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    })
}

/// Maps an I/O error on `path`: not-found is [`ClientOpsError::NotFound`]; a socket (which
/// cannot be opened) and a FIFO with no reader (ENXIO) are named as special files.
pub fn io_error(path: &Path, err: std::io::Error) -> ClientOpsError {
    match err.kind() {
        ErrorKind::NotFound => ClientOpsError::NotFound(PathBuf::from(path)),
        _ if err.raw_os_error() == Some(libc::ENXIO) => ClientOpsError::Failed(format!(
            "{} is a special file (a FIFO or socket); only regular files are read or written",
            path.display()
        )),
        _ => ClientOpsError::Failed(format!("{}: {err}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo touches no memory of ours.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn special_files_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        mkfifo(&fifo);
        for (path, what) in [
            (fifo.as_path(), "FIFO"),
            (Path::new("/dev/zero"), "device"),
            (dir.path(), "directory"),
        ] {
            let err = read_text(path, None, None).unwrap_err().to_string();
            assert!(err.contains(what), "{err}");
            let err = read_text(path, Some(1), Some(3)).unwrap_err().to_string();
            assert!(err.contains(what), "{err}");
        }
        // Writing: a FIFO with no reader and a device are refused before a byte is written.
        for path in [
            fifo.as_path(),
            Path::new("/dev/zero"),
            Path::new("/dev/null"),
        ] {
            let err = write_text(path, "x").unwrap_err().to_string();
            assert!(err.contains("special") || err.contains("device"), "{err}");
        }
    }

    #[test]
    fn line_ranges_read_only_what_they_return() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.txt");
        let mut text = String::new();
        for i in 1..=1000 {
            text.push_str(&format!("line {i}\n"));
        }
        std::fs::write(&path, &text).unwrap();
        assert_eq!(
            read_text(&path, Some(10), Some(3)).unwrap(),
            "line 10\nline 11\nline 12\n"
        );
        assert_eq!(
            read_text(&path, Some(999), None).unwrap(),
            "line 999\nline 1000\n"
        );
        assert_eq!(read_text(&path, None, None).unwrap(), text);
        let small = dir.path().join("small.txt");
        std::fs::write(&small, "a\nb\nc\n").unwrap();
        // (line, limit, expected text; None = an error)
        let cases: &[(Option<u32>, Option<u32>, Option<&str>)] = &[
            (None, None, Some("a\nb\nc\n")),
            (Some(2), None, Some("b\nc\n")),
            (Some(2), Some(1), Some("b\n")),
            (None, Some(2), Some("a\nb\n")),
            (Some(3), Some(10), Some("c\n")),
            (Some(4), None, None),
            (Some(5000), Some(2), None),
        ];
        for (line, limit, want) in cases {
            let got = read_text(&small, *line, *limit).ok();
            assert_eq!(got.as_deref(), *want, "{line:?} {limit:?}");
        }
    }

    #[test]
    fn a_file_too_large_to_read_whole_says_so_and_a_slice_still_works() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.txt");
        let file = File::create(&path).unwrap();
        file.set_len(WHOLE_READ_MAX + 1).unwrap();
        drop(file);
        let err = read_text(&path, None, None).unwrap_err().to_string();
        assert!(err.contains("too large"), "{err}");
        // One endless "line" of NULs: the slice stops at its byte cap.
        let slice = read_text(&path, Some(1), Some(3));
        assert!(slice.is_ok_and(|s| s.len() as u64 <= SLICE_READ_MAX));
    }

    #[test]
    fn writes_replace_the_content_of_regular_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, "a much longer old content").unwrap();
        write_text(&path, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert!(matches!(
            read_text(&dir.path().join("missing"), None, None),
            Err(ClientOpsError::NotFound(_))
        ));
    }
}

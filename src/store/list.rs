//! Listing stored sessions, newest first, a page at a time.
//!
//! Order is by file modification time (every append touches it), then id, both descending.
//! A cursor is the position of the last session handed out; the next page starts strictly
//! after it. Sessions appended to while a client pages move to the front, so they never show
//! up twice in one pass and the others are neither skipped nor repeated.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use chrono::{DateTime, Utc};
use hearth_backend::ContentPart;
use hearth_conversation::SessionId;
use serde::Deserialize;

use super::error::StoreError;
use super::fold::title_from_prompt;
use super::id::validate_session_id;
use super::load::{read_header, split_lines};
use super::paths::Layout;
use super::wire::WirePart;

/// What a session list shows of one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSummary {
    pub id: SessionId,
    pub cwd: PathBuf,
    /// A stored title, else one made from the first prompt; `None` before the first prompt.
    pub title: Option<String>,
    /// When the session file last changed.
    pub updated_at: DateTime<Utc>,
    pub rounds: u64,
    pub path: PathBuf,
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub sessions: Vec<SessionSummary>,
    /// Pass this back for the next page; `None` on the last page.
    pub next_cursor: Option<String>,
}

const CURSOR_PREFIX: &str = "c1.";

/// Where a session sorts: newer first, then larger id first.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct SortKey {
    modified_nanos: i128,
    id: SessionId,
}

impl SortKey {
    fn cursor(&self) -> String {
        format!("{CURSOR_PREFIX}{}.{}", self.modified_nanos, self.id)
    }

    fn parse_cursor(cursor: &str) -> Result<Self, StoreError> {
        let invalid = || StoreError::InvalidCursor(cursor.chars().take(100).collect());
        let rest = cursor.strip_prefix(CURSOR_PREFIX).ok_or_else(invalid)?;
        let (nanos, id) = rest.split_once('.').ok_or_else(invalid)?;
        Ok(Self {
            modified_nanos: nanos.parse().map_err(|_| invalid())?,
            id: validate_session_id(id).map_err(|_| invalid())?,
        })
    }
}

struct Candidate {
    key: SortKey,
    path: PathBuf,
}

/// Lists sessions of one project (`filter_cwd`) or of all projects.
pub(crate) fn list_sessions(
    layout: &Layout,
    filter_cwd: Option<&Path>,
    cursor: Option<&str>,
    limit: usize,
) -> Result<Page, StoreError> {
    let after = cursor.map(SortKey::parse_cursor).transpose()?;
    let filter = filter_cwd.map(super::paths::canonical_cwd);
    let dirs = match &filter {
        Some(cwd) => vec![layout.project_dir(cwd)],
        None => subdirs(&layout.sessions_dir())?,
    };
    let mut candidates = Vec::new();
    for dir in dirs {
        candidates.extend(session_files(&dir)?);
    }
    candidates.sort_by(|a, b| b.key.cmp(&a.key));
    let mut remaining = candidates
        .into_iter()
        .filter(|c| after.as_ref().is_none_or(|after| c.key < *after))
        .peekable();
    let mut sessions = Vec::new();
    let mut last = None;
    while sessions.len() < limit.max(1) {
        let Some(candidate) = remaining.next() else {
            break;
        };
        last = Some(candidate.key.clone());
        match summarize(&candidate) {
            // A session nobody prompted stays resumable by its id, but is no history.
            Ok(summary) if summary.rounds == 0 => {}
            Ok(summary) if filter.as_ref().is_none_or(|cwd| *cwd == summary.cwd) => {
                sessions.push(summary)
            }
            Ok(_) => {}
            Err(e) => tracing::warn!("session left out of the list: {e}"),
        }
    }
    let next_cursor = match (remaining.peek(), last) {
        (Some(_), Some(last)) => Some(last.cursor()),
        _ => None,
    };
    Ok(Page {
        sessions,
        next_cursor,
    })
}

fn subdirs(dir: &Path) -> Result<Vec<PathBuf>, StoreError> {
    Ok(read_dir(dir)?.into_iter().filter(|p| p.is_dir()).collect())
}

fn session_files(dir: &Path) -> Result<Vec<Candidate>, StoreError> {
    let mut out = Vec::new();
    for path in read_dir(dir)? {
        let Some(id) = Layout::session_id_of(&path) else {
            continue;
        };
        let modified = match std::fs::metadata(&path).and_then(|m| m.modified()) {
            Ok(modified) => modified,
            // Deleted since the directory was read.
            Err(_) => continue,
        };
        out.push(Candidate {
            key: SortKey {
                modified_nanos: nanos_since_epoch(modified),
                id,
            },
            path,
        });
    }
    Ok(out)
}

/// The entries of `dir`; none when it does not exist.
fn read_dir(dir: &Path) -> Result<Vec<PathBuf>, StoreError> {
    match std::fs::read_dir(dir) {
        Ok(entries) => Ok(entries.filter_map(|e| e.ok().map(|e| e.path())).collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(StoreError::io(dir, e)),
    }
}

fn nanos_since_epoch(t: SystemTime) -> i128 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(before) => -(before.duration().as_nanos() as i128),
    }
}

fn to_utc(nanos: i128) -> DateTime<Utc> {
    let secs = nanos.div_euclid(1_000_000_000) as i64;
    let sub = nanos.rem_euclid(1_000_000_000) as u32;
    DateTime::from_timestamp(secs, sub).unwrap_or_default()
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Round,
    Title,
    #[serde(other)]
    Other,
}

/// The fields listing needs of a record; the rest of the line is skipped unparsed.
#[derive(Deserialize)]
struct Peek {
    #[serde(rename = "type")]
    kind: Kind,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    user: Vec<WirePart>,
}

/// Like [`Peek`], for when the prompt title is already known.
#[derive(Deserialize)]
struct PeekKind {
    #[serde(rename = "type")]
    kind: Kind,
    #[serde(default)]
    title: Option<String>,
}

fn summarize(candidate: &Candidate) -> Result<SessionSummary, StoreError> {
    let bytes = std::fs::read(&candidate.path).map_err(|e| StoreError::io(&candidate.path, e))?;
    let mut lines = split_lines(&bytes);
    let header = read_header(&candidate.path, lines.next())?;
    let (mut rounds, mut title, mut prompt_title) = (0, None, None);
    for (_, line, _) in lines {
        let (kind, stored_title) = if prompt_title.is_none() {
            let Ok(peek) = serde_json::from_slice::<Peek>(line) else {
                continue;
            };
            if matches!(peek.kind, Kind::Round) {
                prompt_title = title_from_prompt(&text_parts(peek.user));
            }
            (peek.kind, peek.title)
        } else {
            let Ok(peek) = serde_json::from_slice::<PeekKind>(line) else {
                continue;
            };
            (peek.kind, peek.title)
        };
        match kind {
            Kind::Round => rounds += 1,
            Kind::Title => title = stored_title.or(title),
            Kind::Other => {}
        }
    }
    Ok(SessionSummary {
        id: candidate.key.id.clone(),
        cwd: header.cwd,
        title: title.or(prompt_title),
        updated_at: to_utc(candidate.key.modified_nanos),
        rounds,
        path: candidate.path.clone(),
    })
}

fn text_parts(parts: Vec<WirePart>) -> Vec<ContentPart> {
    parts
        .into_iter()
        .filter_map(|p| match p {
            WirePart::Text { text } => Some(ContentPart::Text { text }),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
#[path = "list_tests.rs"]
mod tests;

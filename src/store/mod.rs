//! Session persistence: one append-only JSON Lines file per session, per project, with image
//! bytes in shared blobs. Crash-safe (a kill loses at most the record being written), safe for
//! several processes on one file, and tolerant of damage on load. See `record.rs` for the
//! format and `append.rs` for the write discipline.

mod append;
mod blob;
mod error;
mod fold;
mod id;
mod list;
mod load;
mod paths;
mod record;
mod session_lock;
mod sessions;
mod warning;
mod wire;
mod writer;

pub use blob::BlobHash;
pub use error::{IdProblem, StoreError};
pub use fold::{SessionSnapshot, TITLE_MAX_CHARS, prompt_words, title_from_prompt};
pub use id::{MAX_ID_LEN, validate_session_id};
pub use list::{Page, SessionSummary};
pub use load::LoadedSession;
pub use paths::{DATA_DIR_ENV, canonical_cwd, data_root, private_dir_all, project_key};
pub use record::{
    FORMAT_VERSION, Header, Record, Round, RoundOutcome, SettingsRecord, SummaryRecord,
    UsageRecord, coalesce_events,
};
pub use sessions::Store;
pub use warning::{LoadProblem, LoadWarning};
pub use wire::MISSING_IMAGE_TEXT;
pub use writer::SessionWriter;

#[cfg(test)]
mod test_support;

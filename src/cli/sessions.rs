//! `hearth sessions list|show|delete`: the session store from the command line.

use crate::text_safety::{visible_controls, visible_event};
use std::io::Write;
use std::path::PathBuf;

use clap::Subcommand;
use hearth_conversation::AgentEvent;

use crate::store::{Store, StoreError, validate_session_id};

#[derive(Debug, Clone, Subcommand)]
pub enum SessionsAction {
    /// Sessions of this directory (or every project), newest first.
    List {
        #[arg(long)]
        all_projects: bool,
    },
    /// A session's conversation as text.
    Show { id: String },
    /// Delete a session.
    Delete { id: String },
}

/// Why a sessions command failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionsCommandError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot write to stdout: {0}")]
    Output(#[from] std::io::Error),
}

pub fn run(
    store: &Store,
    action: SessionsAction,
    cwd: PathBuf,
) -> Result<(), SessionsCommandError> {
    let mut out = std::io::stdout().lock();
    match action {
        SessionsAction::List { all_projects } => {
            let filter = (!all_projects).then_some(cwd.as_path());
            let mut cursor: Option<String> = None;
            loop {
                let page = store.list(filter, cursor.as_deref(), 100)?;
                for s in &page.sessions {
                    let when = s.updated_at.format("%Y-%m-%d %H:%M");
                    let title = s.title.clone().unwrap_or_default();
                    let cwd = s.cwd.display().to_string();
                    writeln!(
                        out,
                        "{}  {when}  {:>3} rounds  {}  {}",
                        s.id,
                        s.rounds,
                        visible_controls(&cwd),
                        visible_controls(&title)
                    )?;
                }
                match page.next_cursor {
                    Some(next) => cursor = Some(next),
                    None => break,
                }
            }
        }
        SessionsAction::Show { id } => {
            let id = validate_session_id(&id)?;
            let snapshot = store.load(&id)?.state();
            let cwd = snapshot.cwd.display().to_string();
            writeln!(out, "session {}  ({})", snapshot.id, visible_controls(&cwd))?;
            for event in &snapshot.replay {
                // What the model and tools wrote reaches the terminal with escapes spelled out.
                match visible_event(event).into_owned() {
                    AgentEvent::UserMessage { content } => {
                        let text: String = content
                            .iter()
                            .map(|p| match p {
                                hearth_backend::ContentPart::Text { text } => text.clone(),
                                hearth_backend::ContentPart::Image { .. } => "[image]".into(),
                            })
                            .collect();
                        writeln!(out, "\n> {text}")?;
                    }
                    AgentEvent::AgentText { text } => write!(out, "{text}")?,
                    AgentEvent::ToolCallStarted { card } => writeln!(out, "\n· {}", card.title)?,
                    _ => {}
                }
            }
            writeln!(out)?;
        }
        SessionsAction::Delete { id } => {
            let id = validate_session_id(&id)?;
            store.delete(&id)?;
            writeln!(out, "deleted {id}")?;
        }
    }
    Ok(())
}

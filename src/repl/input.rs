//! Where lines come from. On a terminal, rustyline reads prompts (with history) and permission
//! answers are read in the terminal's own line mode; otherwise every line — prompts and
//! answers alike — comes from one stdin reader thread, so the REPL can be scripted.
//!
//! rustyline owns the terminal only while it reads a prompt. During a turn the terminal is in
//! its normal (cooked) mode: Ctrl-C raises SIGINT, which cancels the turn, and an answer is one
//! line read from fd 0. That read polls, so a cancelled question never swallows the next line.

use std::io::BufRead;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use rustyline::error::ReadlineError;
use rustyline::{Config, DefaultEditor};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::error::ReplError;

/// How often a waiting answer read checks whether its turn was cancelled.
const ANSWER_POLL: Duration = Duration::from_millis(100);
const HISTORY_SIZE: usize = 1000;

/// What reading a prompt gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptLine {
    Line(String),
    /// Ctrl-C at the prompt.
    Interrupted,
    /// Ctrl-D, or the end of piped input.
    Eof,
}

/// What reading a permission answer gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnswerLine {
    Line(String),
    Eof,
    /// The turn was cancelled while waiting.
    Cancelled,
}

/// The REPL's source of lines.
pub struct Input {
    source: Source,
}

enum Source {
    /// stdin and stdout are a terminal.
    Editor {
        /// Taken out while a blocking read runs on another thread.
        editor: Mutex<Option<Box<DefaultEditor>>>,
        history: Option<PathBuf>,
    },
    /// Anything else: lines from a reader thread.
    Lines {
        lines: tokio::sync::Mutex<mpsc::UnboundedReceiver<String>>,
    },
}

impl Input {
    /// A line editor keeping its history in `history` (created if missing; no history when
    /// it cannot be read or written).
    pub fn editor(history: Option<PathBuf>) -> Result<Self, ReplError> {
        let config = Config::builder()
            .auto_add_history(false)
            .max_history_size(HISTORY_SIZE)?
            .history_ignore_space(true)
            .build();
        let mut editor = DefaultEditor::with_config(config)?;
        if let Some(path) = &history
            && path.exists()
            && let Err(err) = editor.load_history(path)
        {
            tracing::warn!("cannot read the REPL history {}: {err}", path.display());
        }
        Ok(Self {
            source: Source::Editor {
                editor: Mutex::new(Some(Box::new(editor))),
                history,
            },
        })
    }

    /// Lines from stdin, read on a thread of their own.
    pub fn lines() -> Self {
        Self::lines_from(std::io::BufReader::new(std::io::stdin()))
    }

    /// Lines from `reader`, read on a thread of their own.
    pub fn lines_from(reader: impl BufRead + Send + 'static) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let spawned = std::thread::Builder::new()
            .name("repl-stdin".into())
            .spawn(move || {
                for line in reader.lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        if let Err(err) = spawned {
            // Without the thread the channel is closed at once: the REPL sees end of input.
            tracing::error!("cannot start the stdin reader: {err}");
        }
        Self {
            source: Source::Lines {
                lines: tokio::sync::Mutex::new(rx),
            },
        }
    }

    /// Whether a person is typing into a line editor (the terminal echoes answers).
    pub fn is_editor(&self) -> bool {
        matches!(self.source, Source::Editor { .. })
    }

    /// Reads one prompt line, showing `prompt` in the editor.
    pub async fn read_prompt(&self, prompt: &str) -> Result<PromptLine, ReplError> {
        match &self.source {
            Source::Editor { editor, history } => {
                read_editor(editor, history.as_ref(), prompt.to_owned()).await
            }
            Source::Lines { lines } => {
                let mut lines = lines.lock().await;
                tokio::select! {
                    line = lines.recv() => Ok(line.map_or(PromptLine::Eof, PromptLine::Line)),
                    signal = tokio::signal::ctrl_c() => match signal {
                        Ok(()) => Ok(PromptLine::Interrupted),
                        Err(_) => Ok(lines.recv().await.map_or(PromptLine::Eof, PromptLine::Line)),
                    },
                }
            }
        }
    }

    /// Reads one answer line, giving up when `cancel` fires.
    pub async fn read_answer(&self, cancel: &CancellationToken) -> AnswerLine {
        match &self.source {
            Source::Editor { .. } => {
                let token = cancel.clone();
                tokio::task::spawn_blocking(move || read_tty_line(&token))
                    .await
                    .unwrap_or(AnswerLine::Eof)
            }
            Source::Lines { lines } => {
                let mut lines = lines.lock().await;
                // A cancelled turn takes no line, even one that is already waiting.
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => AnswerLine::Cancelled,
                    line = lines.recv() => line.map_or(AnswerLine::Eof, AnswerLine::Line),
                }
            }
        }
    }
}

async fn read_editor(
    slot: &Mutex<Option<Box<DefaultEditor>>>,
    history: Option<&PathBuf>,
    prompt: String,
) -> Result<PromptLine, ReplError> {
    let taken = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
    let Some(mut editor) = taken else {
        return Ok(PromptLine::Eof);
    };
    // rustyline blocks its thread until the line is done; keep it off the runtime's workers.
    let joined = tokio::task::spawn_blocking(move || {
        let read = editor.readline(&prompt);
        (editor, read)
    })
    .await;
    let Ok((mut editor, read)) = joined else {
        return Ok(PromptLine::Eof);
    };
    let outcome = match read {
        Ok(line) => {
            if !line.trim().is_empty() {
                let _ = editor.add_history_entry(line.as_str());
                if let Some(path) = history
                    && let Err(err) = editor.save_history(path)
                {
                    tracing::warn!("cannot save the REPL history {}: {err}", path.display());
                }
            }
            Ok(PromptLine::Line(line))
        }
        Err(ReadlineError::Interrupted) => Ok(PromptLine::Interrupted),
        Err(ReadlineError::Eof) => Ok(PromptLine::Eof),
        Err(err) => Err(ReplError::Editor(err)),
    };
    *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(editor);
    outcome
}

/// One line from the terminal in its line mode, polling so that a cancelled turn stops the
/// read before it takes anything. Runs on a blocking thread.
fn read_tty_line(cancel: &CancellationToken) -> AnswerLine {
    let mut line = Vec::new();
    let mut chunk = [0u8; 1024];
    let timeout_ms = i32::try_from(ANSWER_POLL.as_millis()).unwrap_or(100);
    loop {
        if cancel.is_cancelled() {
            return AnswerLine::Cancelled;
        }
        let mut fds = libc::pollfd {
            fd: libc::STDIN_FILENO,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: `fds` is one valid pollfd that lives across the call.
        let ready = unsafe { libc::poll(&mut fds, 1, timeout_ms) };
        if ready < 0 && !interrupted() {
            return AnswerLine::Eof;
        }
        if ready <= 0 {
            continue;
        }
        if cancel.is_cancelled() {
            return AnswerLine::Cancelled;
        }
        // Read fd 0 directly, not through std's buffered stdin: rustyline reads fd 0 next, and
        // bytes parked in a buffer would be lost to it. In line mode one read is one line.
        // SAFETY: the pointer and length describe `chunk`, which outlives the call.
        let n = unsafe { libc::read(libc::STDIN_FILENO, chunk.as_mut_ptr().cast(), chunk.len()) };
        match usize::try_from(n) {
            Ok(0) if line.is_empty() => return AnswerLine::Eof,
            Ok(0) => return AnswerLine::Line(String::from_utf8_lossy(&line).into_owned()),
            Ok(n) => {
                line.extend_from_slice(&chunk[..n]);
                if line.ends_with(b"\n") {
                    let text = String::from_utf8_lossy(&line);
                    return AnswerLine::Line(text.trim_end_matches(['\r', '\n']).to_owned());
                }
            }
            Err(_) if interrupted() => {}
            Err(_) => return AnswerLine::Eof,
        }
    }
}

fn interrupted() -> bool {
    matches!(
        std::io::Error::last_os_error().kind(),
        std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock
    )
}

//! Logging set-up. Logs go to stderr or to a file, never to stdout: in ACP mode stdout is the
//! protocol wire, and one stray line breaks the client.

use std::path::Path;

use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::EnvFilter;

use crate::config::LogSettings;

/// The ACP SDK logs every rejected request at warn with a very long debug dump; hearth logs
/// what matters about those itself.
const DEFAULT_FILTER: &str = "info,agent_client_protocol=error";

/// For the terminal front ends logging to the terminal they draw on: only what needs the
/// user's attention, so log lines do not interleave with the conversation.
const TERMINAL_FILTER: &str = "warn,agent_client_protocol=error";

/// Who reads stderr, which picks the default level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogAudience {
    /// ACP: stderr is the editor's log view.
    Editor,
    /// `hearth repl` and `hearth run`: stderr is the user's terminal.
    Terminal,
}

/// Keeps the non-blocking file writer alive; drop it last so buffered lines are flushed.
pub struct LogGuard {
    _guard: Option<WorkerGuard>,
}

/// Installs the global tracing subscriber. The filter comes from `RUST_LOG`, else the config's
/// level (which `HEARTH_LOG` already overrides), else [`DEFAULT_FILTER`] ([`TERMINAL_FILTER`]
/// for a terminal front end logging to stderr). A log file that cannot be opened
/// falls back to stderr with one warning.
pub fn init(settings: &LogSettings, audience: LogAudience) -> LogGuard {
    let default = match (audience, &settings.file) {
        (LogAudience::Terminal, None) => TERMINAL_FILTER,
        _ => DEFAULT_FILTER,
    };
    let filter = std::env::var("RUST_LOG")
        .ok()
        .filter(|v| !v.is_empty())
        .or_else(|| settings.level.clone())
        .unwrap_or_else(|| default.to_string());
    let filter = EnvFilter::try_new(&filter).unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));

    let mut fallback_warning = None;
    if let Some(path) = &settings.file {
        match open_log_file(path) {
            Ok(file) => {
                let (writer, guard) = tracing_appender::non_blocking(file);
                let installed = tracing_subscriber::fmt()
                    .with_env_filter(filter)
                    .with_ansi(false)
                    .with_writer(writer)
                    .try_init();
                if installed.is_ok() {
                    return LogGuard {
                        _guard: Some(guard),
                    };
                }
                return LogGuard { _guard: None };
            }
            Err(err) => {
                fallback_warning = Some(format!(
                    "cannot open log file {}: {err}; logging to stderr",
                    path.display()
                ))
            }
        }
    }
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
    if let Some(warning) = fallback_warning {
        tracing::warn!("{warning}");
    }
    LogGuard { _guard: None }
}

fn open_log_file(path: &Path) -> std::io::Result<std::fs::File> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
}

use hearth_backend::BackendError;

use crate::agent::TurnError;

/// `hearth run`'s exit codes (documented in the README).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RunExit {
    Ok = 0,
    /// At least one prompt failed.
    PromptFailed = 1,
    /// Bad arguments or a bad batch file.
    Usage = 2,
    /// A prompt ran past `--timeout`, or the backend timed out.
    Timeout = 3,
    /// The backend could not be reached or is unusable.
    BackendUnavailable = 4,
    /// Ctrl-C.
    Interrupted = 130,
}

impl RunExit {
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The exit class of one failed prompt.
    pub fn of_error(err: &TurnError) -> Self {
        match err {
            TurnError::Backend(
                BackendError::ConnectionRefused { .. }
                | BackendError::Transport { .. }
                | BackendError::ModelUnavailable { .. }
                | BackendError::ModelPoisoned { .. },
            )
            | TurnError::NoModel
            | TurnError::UnknownEndpoint(_) => Self::BackendUnavailable,
            TurnError::Backend(BackendError::Timeout { .. } | BackendError::IdleTimeout { .. }) => {
                Self::Timeout
            }
            TurnError::Backend(_) | TurnError::Aborted(_) | TurnError::Roots { .. } => {
                Self::PromptFailed
            }
        }
    }

    /// The run's code from every prompt's: when all failures share a class, that class;
    /// mixed failures are "a prompt failed".
    pub fn combine(outcomes: impl IntoIterator<Item = RunExit>) -> Self {
        let mut failures = outcomes
            .into_iter()
            .filter(|e| *e != RunExit::Ok)
            .peekable();
        let Some(first) = failures.next() else {
            return RunExit::Ok;
        };
        if first == RunExit::Interrupted {
            return first;
        }
        let mut all_same = true;
        for other in failures {
            if other == RunExit::Interrupted {
                return other;
            }
            all_same &= other == first;
        }
        if all_same {
            first
        } else {
            RunExit::PromptFailed
        }
    }
}

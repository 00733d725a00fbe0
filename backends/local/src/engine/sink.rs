//! The sending half of one request's event stream. Terminal events can only be sent by
//! consuming the sink, so a request ends exactly once; a sink dropped without a terminal
//! (a bug or an unwinding thread) still ends its stream with an error.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hearth_backend::FinishReason;
use tokio::sync::mpsc::UnboundedSender;

use crate::engine::EngineEvent;
use crate::error::EngineError;

pub(crate) struct Sink {
    tx: UnboundedSender<EngineEvent>,
    finished: bool,
    /// The engine's count of requests not yet answered, when this request is in it: released
    /// just before the terminal event goes out, so a caller that has seen the end of one
    /// request and submits the next never counts the finished one as ahead.
    pending: Option<Arc<AtomicUsize>>,
}

/// How a request ended.
pub(crate) enum Terminal {
    Done(FinishReason),
    Failed { error: EngineError, partial: String },
    Cancelled,
}

impl Sink {
    pub fn new(tx: UnboundedSender<EngineEvent>) -> Self {
        Self {
            tx,
            finished: false,
            pending: None,
        }
    }

    /// Counts this request in `pending` until it ends; returns how many were counted before.
    pub fn counted(mut self, pending: Arc<AtomicUsize>) -> (Self, usize) {
        let before = pending.fetch_add(1, Ordering::SeqCst);
        self.pending = Some(pending);
        (self, before)
    }

    fn release(&mut self) {
        if let Some(pending) = self.pending.take() {
            pending.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Sends a non-terminal event. A closed receiver is ignored here and seen by
    /// [`Sink::is_closed`].
    pub fn send(&self, event: EngineEvent) {
        debug_assert!(!event.is_terminal());
        let _ = self.tx.send(event);
    }

    /// The consumer dropped its stream: treated like a cancel.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    pub fn finish(mut self, terminal: Terminal) {
        self.finished = true;
        self.release();
        let event = match terminal {
            Terminal::Done(reason) => EngineEvent::Done(reason),
            Terminal::Failed { error, partial } => EngineEvent::Failed { error, partial },
            Terminal::Cancelled => EngineEvent::Cancelled,
        };
        let _ = self.tx.send(event);
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.release();
        if !self.finished {
            let _ = self.tx.send(EngineEvent::Failed {
                error: EngineError::EngineGone("request dropped without an answer".into()),
                partial: String::new(),
            });
        }
    }
}

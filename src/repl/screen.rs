//! The REPL's stdout: one renderer behind a lock, written under that lock, so events from tool
//! tasks and lines from the loop come out whole and in order.

use std::io::Write;
use std::sync::{Mutex, MutexGuard, PoisonError};

use hearth_conversation::AgentEvent;

use super::render::Renderer;

/// Where the REPL writes: stdout, through the renderer.
pub struct Screen {
    renderer: Mutex<Renderer>,
}

impl Screen {
    pub fn new(renderer: Renderer) -> Self {
        Self {
            renderer: Mutex::new(renderer),
        }
    }

    /// Renders and writes one event.
    pub fn event(&self, event: &AgentEvent) {
        self.apply(|r| r.event(event));
    }

    /// Writes `text` as a line of its own.
    pub fn line(&self, text: &str) {
        self.apply(|r| r.line(text));
    }

    /// Runs `f` on the renderer and writes what it returns, all under the lock.
    pub fn apply<F: FnOnce(&mut Renderer) -> String>(&self, f: F) {
        let mut renderer = self.renderer();
        let text = f(&mut renderer);
        if !text.is_empty() {
            let mut out = std::io::stdout().lock();
            // A closed stdout must not kill the session; there is nowhere to report it anyway.
            let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
        }
    }

    /// Reads from the renderer without writing.
    pub fn read<R>(&self, f: impl FnOnce(&mut Renderer) -> R) -> R {
        f(&mut self.renderer())
    }

    fn renderer(&self) -> MutexGuard<'_, Renderer> {
        // A panic mid-render leaves plain data behind; keep using it.
        self.renderer.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

//! The progress bar of a long batch: on stderr, and only when stderr is a terminal, so piped
//! and redirected runs (CI, scripts) get nothing but their results.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Counts finished prompts of a batch; a no-op when there is nothing to draw on.
pub struct BatchProgress {
    bar: Option<ProgressBar>,
    failed: u64,
}

impl BatchProgress {
    /// A bar for `total` items (`unit`: "prompts", "tasks") when `show` holds and stderr is a
    /// terminal.
    pub fn new(total: u64, show: bool, unit: &str) -> Self {
        let bar = (show && std::io::stderr().is_terminal()).then(|| bar(total, unit));
        Self { bar, failed: 0 }
    }

    /// One prompt finished, well or not.
    pub fn finished(&mut self, ok: bool) {
        if !ok {
            self.failed += 1;
        }
        if let Some(bar) = &self.bar {
            if self.failed > 0 {
                bar.set_message(format!("{} failed", self.failed));
            }
            bar.inc(1);
        }
    }

    /// Runs `print` with the bar cleared, so results on a shared terminal never tear it.
    pub fn suspend<R>(&self, print: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(bar) => bar.suspend(print),
            None => print(),
        }
    }

    /// Removes the bar once the batch is over.
    pub fn done(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}

fn bar(total: u64, unit: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    // A template is a compile-time constant here; should it ever fail, the default style
    // still draws a bar.
    let template =
        format!("{{spinner}} [{{elapsed_precise}}] {{bar:30}} {{pos}}/{{len}} {unit} {{msg}}");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_terminal_nothing_is_drawn_and_counting_still_works() {
        let mut progress = BatchProgress::new(3, false, "prompts");
        progress.finished(true);
        progress.finished(false);
        assert!(progress.bar.is_none());
        assert_eq!(progress.failed, 1);
        assert_eq!(progress.suspend(|| 7), 7);
        progress.done();
    }

    #[test]
    fn a_hidden_bar_counts_prompts_and_failures() {
        let mut progress = BatchProgress {
            bar: Some(ProgressBar::hidden()),
            failed: 0,
        };
        progress.bar.as_ref().unwrap().set_length(2);
        progress.finished(false);
        progress.finished(true);
        let bar = progress.bar.as_ref().unwrap();
        assert_eq!(bar.position(), 2);
        assert_eq!(bar.message(), "1 failed");
    }
}

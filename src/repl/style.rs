//! Terminal styling that disappears when there is no terminal: with `Style::plain()` every
//! method returns its text unchanged, so piped output carries no escape codes.

use std::io::IsTerminal;

/// SGR escape sequences, or nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    enabled: bool,
}

const RESET: &str = "\x1b[0m";
const DIM: &str = "\x1b[2m";
const BOLD: &str = "\x1b[1m";
const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const CYAN: &str = "\x1b[36m";

impl Style {
    /// Colour when stdout is a terminal and `NO_COLOR` is unset (<https://no-color.org>).
    pub fn detect() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Self {
            enabled: std::io::stdout().is_terminal() && !no_color,
        }
    }

    /// No styling at all.
    pub fn plain() -> Self {
        Self { enabled: false }
    }

    /// Styling always on (tests of the styled path).
    pub fn ansi() -> Self {
        Self { enabled: true }
    }

    /// Whether escape codes are written.
    pub fn is_enabled(self) -> bool {
        self.enabled
    }

    /// Reasoning, notices, details.
    pub fn dim(self, text: &str) -> String {
        self.wrap(DIM, text)
    }

    /// Titles.
    pub fn bold(self, text: &str) -> String {
        self.wrap(BOLD, text)
    }

    /// Failures and removed lines.
    pub fn red(self, text: &str) -> String {
        self.wrap(RED, text)
    }

    /// Success and added lines.
    pub fn green(self, text: &str) -> String {
        self.wrap(GREEN, text)
    }

    /// Questions and warnings.
    pub fn yellow(self, text: &str) -> String {
        self.wrap(YELLOW, text)
    }

    /// Running cards and diff hunk headers.
    pub fn cyan(self, text: &str) -> String {
        self.wrap(CYAN, text)
    }

    fn wrap(self, code: &str, text: &str) -> String {
        if self.enabled && !text.is_empty() {
            format!("{code}{text}{RESET}")
        } else {
            text.to_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_style_returns_text_unchanged_and_ansi_wraps_it() {
        let plain = Style::plain();
        assert_eq!(plain.dim("x"), "x");
        assert_eq!(plain.red("x"), "x");
        assert_eq!(Style::ansi().dim("x"), "\x1b[2mx\x1b[0m");
        assert_eq!(Style::ansi().green(""), "");
    }
}

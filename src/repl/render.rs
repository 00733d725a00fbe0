//! Agent events → terminal text. Pure: every method returns the text to write, so the same
//! renderer is tested without a terminal. Answers stream inline; reasoning is dimmed behind a
//! margin; each tool card is one line (status glyph, title, `+N -M` for a file change).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use hearth_backend::ContentPart;
use hearth_conversation::{
    AgentEvent, PlanEntry, PlanStatus, Reach, ToolCallId, ToolCard, ToolCardUpdate, ToolContent,
    ToolStatus,
};

use super::commands::ANSWER_CHOICES;
use super::diff::{DiffSummary, summarize, unified};
use super::style::Style;
use crate::text_safety::{visible_controls, visible_event};

/// The margin in front of every line of reasoning (dimmed on a terminal).
const THOUGHT_MARGIN: &str = "┊ ";
/// A failure reason on a card is cut to this many characters.
const DETAIL_CHARS: usize = 120;

/// What the last text written belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    None,
    Text,
    Thought,
}

/// What the renderer remembers of one tool card.
#[derive(Debug, Clone)]
struct Card {
    title: String,
    status: ToolStatus,
    summary: Option<DiffSummary>,
    detail: Option<String>,
}

/// Turns events into text for the terminal.
pub struct Renderer {
    style: Style,
    cwd: PathBuf,
    show_thoughts: bool,
    stream: Stream,
    at_line_start: bool,
    cards: HashMap<ToolCallId, Card>,
    last_diff: Option<String>,
    usage: Option<(u64, u64)>,
}

impl Renderer {
    /// Paths in diffs are shown relative to `cwd`.
    pub fn new(style: Style, cwd: PathBuf) -> Self {
        Self {
            style,
            cwd,
            show_thoughts: true,
            stream: Stream::None,
            at_line_start: true,
            cards: HashMap::new(),
            last_diff: None,
            usage: None,
        }
    }

    pub fn style(&self) -> Style {
        self.style
    }

    /// The text for one event.
    pub fn event(&mut self, event: &AgentEvent) -> String {
        // Nothing from the model, a tool or a file reaches the terminal raw (escapes, CR).
        let event = visible_event(event);
        match event.as_ref() {
            AgentEvent::AgentText { text } => self.text(text),
            AgentEvent::AgentThought { text } => self.thought(text),
            AgentEvent::ToolCallStarted { card } => self.card_started(card),
            AgentEvent::ToolCallUpdated { id, update } => self.card_updated(id, update),
            AgentEvent::Plan { entries } => self.plan(entries),
            AgentEvent::Usage { used, size } => {
                self.usage = Some((*used, *size));
                String::new()
            }
            AgentEvent::Notice { text } => self.line(&self.style.dim(&format!("· {text}"))),
            AgentEvent::UserMessage { content } => {
                let text: Vec<&str> = content
                    .iter()
                    .filter_map(|part| match part {
                        ContentPart::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                let prompt = format!("{}{}", self.style.bold("> "), text.join(" "));
                self.line(&prompt)
            }
            AgentEvent::SessionTitle { .. } => String::new(),
        }
    }

    /// A new turn: forget the previous turn's cards.
    pub fn start_turn(&mut self) {
        self.cards.clear();
    }

    /// Another session: its context figures are not known yet.
    pub fn start_session(&mut self) {
        self.usage = None;
    }

    /// Ends whatever is streaming, so the next output starts on a fresh line.
    pub fn finish(&mut self) -> String {
        self.stream = Stream::None;
        if self.at_line_start {
            String::new()
        } else {
            self.at_line_start = true;
            "\n".to_owned()
        }
    }

    /// `text` as a line of its own.
    pub fn line(&mut self, text: &str) -> String {
        let mut out = self.finish();
        out.push_str(text);
        out.push('\n');
        out
    }

    /// The permission question for `card`, left open for the answer on the same line.
    pub fn permission_question(&mut self, card: &ToolCard, reach: Reach) -> String {
        let mut out = self.finish();
        let summary = diff_of(&card.content).map(|(_, s)| self.summary(s));
        // What the call shows besides its title (a command's every line) comes first, so the
        // question is the last line, next to where the answer is typed.
        for content in &card.content {
            if let ToolContent::Text { text } = content {
                for line in visible_controls(text).lines() {
                    out.push_str(&format!("  {line}\n"));
                }
            }
        }
        out.push_str(&self.style.yellow("? "));
        out.push_str("allow ");
        out.push_str(&self.style.bold(&visible_controls(&card.title)));
        if let Some(summary) = summary {
            out.push_str(&format!(" ({summary})"));
        }
        if reach == Reach::OutsideRoots {
            out.push_str(&self.style.red(" — outside the project"));
        }
        out.push_str(&format!("? {ANSWER_CHOICES} "));
        self.at_line_start = false;
        out
    }

    /// The question was answered. `echo` is the answer when the terminal did not show it
    /// (input not from a terminal); a terminal already moved to the next line.
    pub fn answered(&mut self, echo: Option<&str>) -> String {
        self.at_line_start = true;
        echo.map(|e| format!("{e}\n")).unwrap_or_default()
    }

    /// Shows or hides reasoning; returns whether it is now shown.
    pub fn toggle_thoughts(&mut self) -> bool {
        self.show_thoughts = !self.show_thoughts;
        self.show_thoughts
    }

    /// The last file change in full, coloured on a terminal.
    pub fn last_diff(&self) -> Option<String> {
        let diff = self.last_diff.as_ref()?;
        let style = self.style;
        let lines: Vec<String> = diff
            .lines()
            .map(|line| {
                if line.starts_with("+++") || line.starts_with("---") {
                    style.bold(line)
                } else if line.starts_with('+') {
                    style.green(line)
                } else if line.starts_with('-') {
                    style.red(line)
                } else if line.starts_with("@@") {
                    style.cyan(line)
                } else {
                    line.to_owned()
                }
            })
            .collect();
        Some(lines.join("\n"))
    }

    /// The last context-window figures: (tokens used, window size).
    pub fn usage(&self) -> Option<(u64, u64)> {
        self.usage
    }

    fn text(&mut self, text: &str) -> String {
        if text.is_empty() {
            return String::new();
        }
        let mut out = String::new();
        if self.stream == Stream::Thought {
            out.push_str(&self.finish());
        }
        self.stream = Stream::Text;
        out.push_str(text);
        self.at_line_start = text.ends_with('\n');
        out
    }

    fn thought(&mut self, text: &str) -> String {
        if !self.show_thoughts || text.is_empty() {
            return String::new();
        }
        let mut out = String::new();
        if self.stream != Stream::Thought {
            out.push_str(&self.finish());
            self.stream = Stream::Thought;
        }
        for piece in text.split_inclusive('\n') {
            if self.at_line_start {
                out.push_str(&self.style.dim(THOUGHT_MARGIN));
            }
            let body = piece.strip_suffix('\n');
            out.push_str(&self.style.dim(body.unwrap_or(piece)));
            self.at_line_start = body.is_some();
            if self.at_line_start {
                out.push('\n');
            }
        }
        out
    }

    fn card_started(&mut self, card: &ToolCard) -> String {
        let mut state = Card {
            title: card.title.clone(),
            status: card.status,
            summary: None,
            detail: None,
        };
        self.take_content(&mut state, &card.content);
        let line = self.card_line(&state);
        self.cards.insert(card.id.clone(), state);
        self.line(&line)
    }

    fn card_updated(&mut self, id: &ToolCallId, update: &ToolCardUpdate) -> String {
        let mut state = self.cards.remove(id).unwrap_or_else(|| Card {
            title: id.to_string(),
            status: ToolStatus::Pending,
            summary: None,
            detail: None,
        });
        if let Some(title) = &update.title {
            state.title.clone_from(title);
        }
        if let Some(content) = &update.content {
            self.take_content(&mut state, content);
        }
        let ended = update.status.filter(|s| {
            *s != state.status && matches!(s, ToolStatus::Completed | ToolStatus::Failed)
        });
        if let Some(status) = update.status {
            state.status = status;
        }
        let out = match ended {
            Some(_) => {
                let line = self.card_line(&state);
                self.line(&line)
            }
            None => String::new(),
        };
        self.cards.insert(id.clone(), state);
        out
    }

    /// Keeps a card's diff summary (and the diff for `/diff`) and its first line of text.
    fn take_content(&mut self, state: &mut Card, content: &[ToolContent]) {
        if let Some((diff, summary)) = diff_of(content) {
            state.summary = Some(summary);
            self.last_diff = Some(diff_text(&self.cwd, diff));
        }
        state.detail = content.iter().find_map(|c| match c {
            ToolContent::Text { text } => text.lines().find(|l| !l.trim().is_empty()).map(cut),
            _ => None,
        });
    }

    fn card_line(&self, card: &Card) -> String {
        let style = self.style;
        let glyph = match card.status {
            ToolStatus::Pending | ToolStatus::InProgress => style.cyan("•"),
            ToolStatus::Completed => style.green("✓"),
            ToolStatus::Failed => style.red("✗"),
        };
        let mut line = format!("{glyph} {}", style.bold(&card.title));
        if let Some(summary) = card.summary {
            line.push_str("  ");
            line.push_str(&self.summary(summary));
        }
        if card.status == ToolStatus::Failed
            && let Some(detail) = &card.detail
        {
            line.push_str(&style.dim(&format!(" — {detail}")));
        }
        line
    }

    fn summary(&self, summary: DiffSummary) -> String {
        format!(
            "{} {}",
            self.style.green(&format!("+{}", summary.added)),
            self.style.red(&format!("-{}", summary.removed))
        )
    }

    fn plan(&mut self, entries: &[PlanEntry]) -> String {
        let mut out = self.line(&self.style.bold("Plan:"));
        for entry in entries {
            let mark = match entry.status {
                PlanStatus::Pending => "[ ]",
                PlanStatus::InProgress => "[~]",
                PlanStatus::Completed => "[x]",
            };
            let line = format!("  {mark} {}", entry.content);
            let line = if entry.status == PlanStatus::Completed {
                self.style.dim(&line)
            } else {
                line
            };
            out.push_str(&line);
            out.push('\n');
        }
        out
    }
}

/// The first file change of a card, with its summary.
fn diff_of(content: &[ToolContent]) -> Option<(&ToolContent, DiffSummary)> {
    content.iter().find_map(|c| match c {
        ToolContent::Diff {
            old_text, new_text, ..
        } => Some((c, summarize(old_text.as_deref(), new_text))),
        _ => None,
    })
}

fn diff_text(cwd: &Path, diff: &ToolContent) -> String {
    match diff {
        ToolContent::Diff {
            path,
            old_text,
            new_text,
        } => {
            let shown = path.strip_prefix(cwd).unwrap_or(path);
            unified(shown, old_text.as_deref(), new_text)
        }
        _ => String::new(),
    }
}

fn cut(line: &str) -> String {
    let line = line.trim();
    match line.char_indices().nth(DETAIL_CHARS) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line.to_owned(),
    }
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;

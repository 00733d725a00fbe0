//! The `/context` report: how full the window is, what is in it and what was left out.

use std::collections::BTreeSet;
use std::fmt;

use hearth_conversation::HistoryEntry;

use super::projection::Projection;
use super::slots::ElisionKind;
use super::tokens::Budget;

/// Count and tokens saved of one kind of elision.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ElidedCount {
    /// Entries affected.
    pub entries: usize,
    pub tokens_saved: usize,
}

/// What the next request carries, for `/context` in the REPL and in ACP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextReport {
    /// Prompt tokens of the next request.
    pub used: usize,
    pub window: u32,
    /// Reserved for the answer.
    pub max_tokens: u32,
    pub margin: u32,
    pub system_tokens: usize,
    /// What the prompt would cost with nothing elided.
    pub unelided: usize,
    pub user_messages: usize,
    pub assistant_messages: usize,
    pub tool_results: usize,
    pub images: usize,
    pub tool_outputs_elided: ElidedCount,
    pub reasoning_elided: ElidedCount,
    pub assistant_text_elided: ElidedCount,
    pub truncated: ElidedCount,
    pub dropped: ElidedCount,
    /// History entries a compaction summary stands in for.
    pub summary_covers: Option<usize>,
    pub fits: bool,
}

/// Describes `projection` against `budget`.
pub fn describe(projection: &Projection, budget: &Budget) -> ContextReport {
    let mut report = ContextReport {
        used: projection.tokens,
        window: budget.window,
        max_tokens: budget.max_tokens,
        margin: budget.margin,
        system_tokens: projection.system_tokens,
        unelided: projection.unelided_tokens,
        user_messages: 0,
        assistant_messages: 0,
        tool_results: 0,
        images: 0,
        tool_outputs_elided: ElidedCount::default(),
        reasoning_elided: ElidedCount::default(),
        assistant_text_elided: ElidedCount::default(),
        truncated: ElidedCount::default(),
        dropped: ElidedCount::default(),
        summary_covers: projection.summary_covers,
        fits: projection.fits,
    };
    for entry in &projection.entries {
        match entry {
            HistoryEntry::User { content } => {
                report.user_messages += 1;
                report.images += content
                    .iter()
                    .filter(|p| matches!(p, hearth_backend::ContentPart::Image { .. }))
                    .count();
            }
            HistoryEntry::Assistant { .. } => report.assistant_messages += 1,
            HistoryEntry::ToolResult { .. } => report.tool_results += 1,
        }
    }
    // An entry elided and later dropped counts once, as dropped.
    let dropped: BTreeSet<usize> = projection
        .elided
        .iter()
        .filter(|e| e.kind == ElisionKind::Dropped)
        .map(|e| e.index)
        .collect();
    for elision in &projection.elided {
        if elision.kind != ElisionKind::Dropped && dropped.contains(&elision.index) {
            continue;
        }
        let slot = match elision.kind {
            ElisionKind::ToolOutput => &mut report.tool_outputs_elided,
            ElisionKind::Reasoning => &mut report.reasoning_elided,
            ElisionKind::AssistantText => &mut report.assistant_text_elided,
            ElisionKind::Truncated => &mut report.truncated,
            ElisionKind::Dropped => &mut report.dropped,
        };
        slot.entries += 1;
        slot.tokens_saved += elision.tokens_saved;
    }
    report
}

impl ContextReport {
    /// Share of the window the prompt takes, in percent.
    pub fn percent(&self) -> f64 {
        if self.window == 0 {
            return 100.0;
        }
        self.used as f64 * 100.0 / f64::from(self.window)
    }
}

impl fmt::Display for ContextReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "Context: {} of {} tokens ({:.0}%); {} reserved for the answer, {} safety margin.",
            self.used,
            self.window,
            self.percent(),
            self.max_tokens,
            self.margin
        )?;
        if !self.fits {
            writeln!(
                f,
                "Warning: the prompt does not fit even with everything elided; shorten the \
                 system prompt or the messages, or raise the window."
            )?;
        }
        writeln!(
            f,
            "In the window: system prompt ({} tokens), {} user messages{}, {} assistant \
             messages, {} tool results.",
            self.system_tokens,
            self.user_messages,
            if self.images > 0 {
                format!(" ({} images)", self.images)
            } else {
                String::new()
            },
            self.assistant_messages,
            self.tool_results
        )?;
        if let Some(covers) = self.summary_covers {
            writeln!(
                f,
                "A summary stands in for the first {covers} entries of the conversation."
            )?;
        }
        let lines = [
            ("tool outputs elided", self.tool_outputs_elided),
            ("reasoning blocks dropped", self.reasoning_elided),
            ("assistant messages elided", self.assistant_text_elided),
            ("entries truncated", self.truncated),
            ("old exchanges left out", self.dropped),
        ];
        let any = lines.iter().any(|(_, c)| c.entries > 0);
        if !any {
            return writeln!(
                f,
                "Nothing elided: the whole conversation is in the window."
            );
        }
        writeln!(
            f,
            "Elided to fit (the whole conversation would take {} tokens):",
            self.unelided
        )?;
        for (what, count) in lines.iter().filter(|(_, c)| c.entries > 0) {
            writeln!(
                f,
                "- {} {what} (saving {} tokens)",
                count.entries, count.tokens_saved
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::slots::Elision;
    use hearth_backend::ContentPart;

    fn projection(elided: Vec<Elision>) -> Projection {
        Projection {
            entries: vec![
                HistoryEntry::User {
                    content: vec![
                        ContentPart::text("hi"),
                        ContentPart::Image {
                            mime_type: "image/png".into(),
                            data: String::new(),
                        },
                    ],
                },
                HistoryEntry::Assistant {
                    text: "ok".into(),
                    reasoning: None,
                    tool_calls: Vec::new(),
                },
            ],
            elided,
            tokens: 16_384,
            system_tokens: 1000,
            unelided_tokens: 40_000,
            summary_covers: Some(7),
            tail_start: 1,
            fits: true,
        }
    }

    #[test]
    fn counts_entries_and_elisions() {
        let elided = vec![
            Elision {
                index: 3,
                kind: ElisionKind::ToolOutput,
                tokens_saved: 500,
            },
            Elision {
                index: 5,
                kind: ElisionKind::ToolOutput,
                tokens_saved: 200,
            },
            Elision {
                index: 5,
                kind: ElisionKind::Dropped,
                tokens_saved: 20,
            },
        ];
        let report = describe(&projection(elided), &Budget::new(32_768, 4096));
        assert_eq!(report.user_messages, 1);
        assert_eq!(report.images, 1);
        assert_eq!(report.assistant_messages, 1);
        assert_eq!(report.tool_outputs_elided.entries, 1);
        assert_eq!(report.tool_outputs_elided.tokens_saved, 500);
        assert_eq!(report.dropped.entries, 1);
        let text = report.to_string();
        assert!(text.contains("16384 of 32768 tokens (50%)"), "{text}");
        assert!(text.contains("1 tool outputs elided (saving 500 tokens)"));
        assert!(text.contains("first 7 entries"));
        assert!(text.contains("would take 40000 tokens"));
        assert!(text.contains("(1 images)"));
    }

    #[test]
    fn says_when_nothing_was_elided() {
        let report = describe(&projection(Vec::new()), &Budget::new(32_768, 4096));
        assert!(report.to_string().contains("Nothing elided"));
    }
}

//! Catching a model that goes in circles: the same call again with nothing changed since, or
//! an empty answer after its tool results. Each gets one nudge that tells the model what to do
//! instead; a model that does it again ends the turn with a reason the user can read.

use std::collections::HashSet;

use hearth_conversation::{HistoryEntry, ToolCallRecord};

use crate::tools::ToolRegistry;

/// How the answer to every call that was not run begins (a repeat's, a copy of the worked
/// example's), so that a result the call never had is told apart from one it had.
pub const NOT_RUN: &str = "Not run";

/// How the answer to a call that was not run because it repeats one begins.
pub const NOT_RUN_AGAIN: &str = "Not run again";

/// What the model is told when it repeats a call.
pub const REPEAT_NUDGE: &str = "Not run again: you already made this exact call, and nothing has \
changed since; its result is above. Use that result to answer the user now, or make a \
different call.";

/// What the model is told when it answers nothing after tool results.
pub const BLANK_NUDGE: &str = "Your last reply was empty. Answer my request now, in plain \
text, using the tool results above if there are any.";

/// The turn's record of calls since the project last changed.
#[derive(Debug, Default)]
pub struct LoopGuard {
    enabled: bool,
    /// Calls (name and arguments) run since the last call that could change the project.
    seen: HashSet<String>,
    /// Rounds in a row whose every call was a repeat.
    repeat_rounds: u32,
    blank_nudged: bool,
    /// A nudge was just given: the next request may insist on a text answer.
    answer_due: bool,
}

/// What to do with a round that called no tool.
#[derive(Debug, PartialEq, Eq)]
pub enum Silence {
    /// It said something: the turn ends normally.
    Answered,
    /// Ask again with [`BLANK_NUDGE`].
    Nudge,
    /// Nudged once already: end the turn, telling the user why.
    GiveUp(&'static str),
}

impl LoopGuard {
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled,
            ..Self::default()
        }
    }

    fn key(call: &ToolCallRecord) -> String {
        format!("{}\u{0}{}", call.name, call.arguments)
    }

    /// Whether `call` repeats one made since the project last changed.
    pub fn is_repeat(&self, call: &ToolCallRecord) -> bool {
        self.enabled && self.seen.contains(&Self::key(call))
    }

    /// Records the calls that ran this round. A call that may change the project (a write, an
    /// edit, a command) makes every earlier call worth making again.
    pub fn ran(&mut self, calls: &[ToolCallRecord], tools: &ToolRegistry) {
        for call in calls {
            if !tools.runs_concurrently(&call.name) {
                self.seen.clear();
            }
            self.seen.insert(Self::key(call));
        }
    }

    /// Counts a round whose calls were all repeats; true when the turn should stop.
    pub fn repeated_round(&mut self, all_repeats: bool) -> bool {
        self.repeat_rounds = if all_repeats {
            self.repeat_rounds + 1
        } else {
            0
        };
        self.answer_due |= self.enabled && self.repeat_rounds == 1;
        self.enabled && self.repeat_rounds >= 2
    }

    /// Judges a round that made no call.
    pub fn silence(&mut self, text: &str) -> Silence {
        if !self.enabled || !text.trim().is_empty() {
            return Silence::Answered;
        }
        if self.blank_nudged {
            return Silence::GiveUp("The model gave no answer, even when asked again.");
        }
        self.blank_nudged = true;
        self.answer_due = true;
        Silence::Nudge
    }
}

/// The nudge for a blank answer, as the next user message.
impl LoopGuard {
    /// True once after a nudge (a round of repeated calls, a blank answer): the model has what
    /// it needs and should now answer in text.
    pub fn take_answer_due(&mut self) -> bool {
        std::mem::take(&mut self.answer_due)
    }
}

/// Longest part of an earlier result a repeat's answer quotes, in characters.
const QUOTED_RESULT_CHARS: usize = 2000;

/// What a repeated call is answered: that it was not run, and (where the history still holds
/// it) the result it had, quoted right where the model looks. Small models that repeat a call
/// have usually lost sight of the result a few messages up.
pub fn repeat_answer(history: &[HistoryEntry], call: &ToolCallRecord) -> String {
    let Some(output) = earlier_result(history, call) else {
        return REPEAT_NUDGE.to_string();
    };
    let mut quoted: String = output.chars().take(QUOTED_RESULT_CHARS).collect();
    if quoted.len() < output.len() {
        quoted.push('…');
    }
    format!(
        "Not run again: you already made this exact call, and nothing has changed since. Its \
         result was:\n{}\nUse that result to answer the user now, or make a different call.",
        quoted.trim_end()
    )
}

/// The output of the last time `call` ran, if the history holds it.
fn earlier_result<'h>(history: &'h [HistoryEntry], call: &ToolCallRecord) -> Option<&'h str> {
    let key = LoopGuard::key(call);
    history.iter().rev().find_map(|entry| match entry {
        HistoryEntry::ToolResult {
            call_id, output, ..
        } => {
            let ran = history.iter().any(|e| match e {
                HistoryEntry::Assistant { tool_calls, .. } => tool_calls
                    .iter()
                    .any(|c| &c.id == call_id && LoopGuard::key(c) == key),
                _ => false,
            });
            (ran && !output.starts_with(NOT_RUN_AGAIN)).then_some(output.as_str())
        }
        _ => None,
    })
}

pub fn blank_nudge() -> HistoryEntry {
    HistoryEntry::User {
        content: vec![hearth_backend::ContentPart::text(BLANK_NUDGE)],
    }
}

/// What the model is told when its answer only said the instructions back.
pub const ECHO_NUDGE: &str = "Your last reply only repeated your instructions. Answer my \
request now, in plain text, using the tool results above if there are any.";

/// The nudge for a round that answered nothing: [`BLANK_NUDGE`], or [`ECHO_NUDGE`] when it
/// `echoed` the instructions.
pub fn silence_nudge(echoed: bool) -> HistoryEntry {
    if !echoed {
        return blank_nudge();
    }
    HistoryEntry::User {
        content: vec![hearth_backend::ContentPart::text(ECHO_NUDGE)],
    }
}

/// Whether `answer` is only words of `instructions` said back ("The project is at …;
/// relative paths are resolved there."): small models answer so when they have nothing to say.
pub fn echoes(answer: &str, instructions: &str) -> bool {
    let answer = answer.trim();
    answer.len() >= ECHO_CHARS && instructions.contains(answer)
}

/// Fewest characters of an answer taken for an echo of the instructions: a short answer ("Yes.",
/// a file name) may well stand in them too.
const ECHO_CHARS: usize = 24;

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_conversation::ToolCallId;
    use serde_json::json;

    fn call(name: &str, args: serde_json::Value) -> ToolCallRecord {
        ToolCallRecord {
            id: ToolCallId::generate(),
            name: name.into(),
            arguments: args,
        }
    }

    #[test]
    fn a_read_repeated_with_nothing_changed_is_caught_and_a_write_in_between_clears_it() {
        let tools = ToolRegistry::builtin();
        let mut guard = LoopGuard::new(true);
        let read = call("read_file", json!({"path": "a"}));
        assert!(!guard.is_repeat(&read));
        guard.ran(std::slice::from_ref(&read), &tools);
        assert!(guard.is_repeat(&read));
        assert!(!guard.is_repeat(&call("read_file", json!({"path": "b"}))));
        guard.ran(
            &[call("write_file", json!({"path": "a", "content": "x"}))],
            &tools,
        );
        assert!(!guard.is_repeat(&read));
        // Running the tests again after an edit is not a loop; running them twice in a row is.
        let test = call("bash", json!({"command": "pytest"}));
        guard.ran(std::slice::from_ref(&test), &tools);
        assert!(guard.is_repeat(&test));
    }

    #[test]
    fn every_answer_to_a_repeat_says_it_was_not_run() {
        let read = call("read_file", json!({"path": "a"}));
        assert!(NOT_RUN_AGAIN.starts_with(NOT_RUN) && REPEAT_NUDGE.starts_with(NOT_RUN_AGAIN));
        assert!(repeat_answer(&[], &read).starts_with(NOT_RUN_AGAIN));
        let history = vec![
            HistoryEntry::Assistant {
                text: String::new(),
                reasoning: None,
                tool_calls: vec![read.clone()],
            },
            HistoryEntry::ToolResult {
                call_id: read.id.clone(),
                name: read.name.clone(),
                output: "alpha".into(),
                is_error: false,
            },
        ];
        let quoted = repeat_answer(&history, &read);
        assert!(
            quoted.starts_with(NOT_RUN_AGAIN) && quoted.contains("\nalpha\n"),
            "{quoted}"
        );
    }

    #[test]
    fn two_rounds_of_repeats_stop_the_turn_and_one_good_round_resets_the_count() {
        let mut guard = LoopGuard::new(true);
        assert!(!guard.repeated_round(true));
        assert!(
            guard.take_answer_due(),
            "an answer is due after the first repeat"
        );
        assert!(!guard.take_answer_due(), "once");
        assert!(!guard.repeated_round(false));
        assert!(!guard.take_answer_due());
        assert!(!guard.repeated_round(true));
        assert!(guard.repeated_round(true));
        let mut off = LoopGuard::new(false);
        assert!(!off.repeated_round(true) && !off.take_answer_due());
    }

    #[test]
    fn a_repeat_is_answered_with_the_result_of_the_call_it_repeats() {
        let read = call("read_file", json!({"path": "a"}));
        let other = call("read_file", json!({"path": "b"}));
        let result = |c: &ToolCallRecord, output: &str| HistoryEntry::ToolResult {
            call_id: c.id.clone(),
            name: c.name.clone(),
            output: output.into(),
            is_error: false,
        };
        let asked = |calls: Vec<ToolCallRecord>| HistoryEntry::Assistant {
            text: String::new(),
            reasoning: None,
            tool_calls: calls,
        };
        let again = call("read_file", json!({"path": "a"}));
        let history = vec![
            asked(vec![read.clone(), other.clone()]),
            result(&read, "alpha"),
            result(&other, "beta"),
            asked(vec![again.clone()]),
            result(&again, REPEAT_NUDGE),
        ];
        let answer = repeat_answer(&history, &again);
        assert!(answer.contains("Its result was:\nalpha\n"), "{answer}");
        assert!(!answer.contains("beta"), "{answer}");
        assert_eq!(repeat_answer(&history[3..], &again), REPEAT_NUDGE);

        let long = "x".repeat(QUOTED_RESULT_CHARS + 10);
        let history = vec![asked(vec![read.clone()]), result(&read, &long)];
        let answer = repeat_answer(&history, &read);
        assert!(answer.contains(&format!("{}…", "x".repeat(QUOTED_RESULT_CHARS))));
        assert!(!answer.contains(&long));
    }

    #[test]
    fn a_blank_answer_is_nudged_once_then_ends_the_turn() {
        let tools = ToolRegistry::builtin();
        let mut guard = LoopGuard::new(true);
        guard.ran(&[call("list_dir", json!({}))], &tools);
        assert_eq!(guard.silence("Here you go."), Silence::Answered);
        assert_eq!(guard.silence("\n \n"), Silence::Nudge);
        assert!(guard.take_answer_due());
        assert!(matches!(guard.silence(""), Silence::GiveUp(_)));
        let mut off = LoopGuard::new(false);
        off.ran(&[call("list_dir", json!({}))], &tools);
        assert_eq!(off.silence(""), Silence::Answered);
        assert!(!off.is_repeat(&call("list_dir", json!({}))));
    }

    #[test]
    fn an_answer_that_only_says_the_instructions_back_is_an_echo() {
        let instructions =
            "You are hearth. The project is at /p; relative paths are resolved there.";
        assert!(echoes(
            "  The project is at /p; relative paths are resolved there.\n",
            instructions
        ));
        // Short answers and answers with words of their own are not.
        assert!(!echoes("You are hearth.", instructions));
        assert!(!echoes(
            "The project is at /p; relative paths are resolved there. It has 17 rows.",
            instructions
        ));
    }
}

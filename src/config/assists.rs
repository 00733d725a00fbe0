//! The help hearth gives models that need it: each assist is on by default, can be turned off
//! in the config (`[agent] assists_off = […]`) and is measured with `hearth eval --without`.

use std::collections::BTreeSet;

use serde::Deserialize;

use crate::parse::TextCalls;

/// One assist.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub enum Assist {
    /// A call-shaped JSON object naming no declared tool is answered to the model with the real
    /// tool list instead of being shown as the answer.
    TextCalls,
    /// Files the prompt names that exist in the project are attached to it (bounded), as an
    /// editor's @-mention would.
    AttachFiles,
    /// A session's first prompt carries the project's layout (two levels, bounded), so the
    /// model knows which files exist before it answers about them.
    ProjectMap,
    /// A call repeated with the same arguments, or a blank answer after tool results, gets a
    /// nudge; a second one ends the turn with an honest reason.
    LoopGuard,
    /// Tool descriptions cut to their first sentence when the window is small.
    CompactTools,
    /// An answer that describes running one of the tools ("you can use the `list_dir`
    /// function") instead of calling it gets one nudge to make the call.
    NarratedCalls,
    /// A request to change files it names ("create hello.py", "fix the typo in app.py") whose
    /// answer left all of them as they were gets one nudge to make the change with the tools;
    /// the answer to it must be a call (the local engine opens it, OpenAI servers are sent
    /// `tool_choice: "required"`).
    UnchangedFiles,
    /// A request that ends with tool results ends with a one-line reminder of what the user
    /// asked (in the request only).
    RestateTask,
    /// The local engine holds every Hermes call the model opens to a declared tool with
    /// arguments that fit its schema (grammar-constrained sampling).
    CallGrammar,
    /// With call_grammar, the local engine also holds a call the model writes without the
    /// tags (a line that opens `{"name"`), and ends the answer when it closes, so the call
    /// runs before the model writes another.
    BareCalls,
    /// After a loop_guard nudge (a round of calls already made, a blank answer), the next
    /// request insists on a text answer: the local engine samples no call and no blank
    /// answer, an OpenAI server gets `tool_choice: "none"`, an in-band format stops at a call.
    AnswerRound,
    /// A short worked example (a code answer, a file written, a command run, each answered
    /// from its result) after the tool block, for the Hermes format in a small window.
    WorkedExample,
    /// After a loop_guard nudge, the answer is asked for in a short request of its own: the
    /// prompt, what each call of the turn returned and the request again, with no tool block
    /// (the history keeps the real rounds). Takes the place of answer_round's request.
    AnswerDigest,
    /// A file a write or an edit left that does not parse as its type (JSON, TOML, Python,
    /// shell; parsed, never run) gets the parser's message at the end of the call's result.
    CheckWrites,
    /// A request to change files it names whose answer left them as they were, with the code
    /// in a fenced block: each file gets the block that fits it (the whole file again, or
    /// Python definitions merged by name), written through the permission policy.
    AnswerEdits,
    /// The prompt's identifiers (`connect_db`, `TODO`) and rarer words (`license`) are looked
    /// up in the project's text files; the lines that hold them, with the two above each, ride
    /// along with the prompt (bounded; named, ignored, binary and secret files left out).
    LookupTerms,
    /// The code of an answer is checked (Rust type-checked by `rustc`, Python compiled by
    /// `python3`; neither run); code that fails is asked for again, fixed, with the checker's
    /// complaint, and a fix that passes is shown after the answer.
    CheckAnswerCode,
    /// An answer that gives a hash (32 hex digits or more) that no tool result and no message
    /// of the user holds gets one nudge to compute it (`sha256sum FILE` spelled out as a
    /// `bash` call where the request names both); given again, it keeps a note that it was
    /// not computed.
    GroundHashes,
    /// One `edit_file` call whose edits change settings the request names (`MAX_RETRIES`) and
    /// also others it never mentions (`TIMEOUT`): the others are not made, and the call's
    /// result says so.
    EditScope,
}

impl Assist {
    pub const ALL: [Assist; 19] = [
        Self::TextCalls,
        Self::AttachFiles,
        Self::ProjectMap,
        Self::LoopGuard,
        Self::CompactTools,
        Self::NarratedCalls,
        Self::UnchangedFiles,
        Self::RestateTask,
        Self::CallGrammar,
        Self::BareCalls,
        Self::AnswerRound,
        Self::WorkedExample,
        Self::AnswerDigest,
        Self::CheckWrites,
        Self::AnswerEdits,
        Self::LookupTerms,
        Self::CheckAnswerCode,
        Self::GroundHashes,
        Self::EditScope,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Self::TextCalls => "text_calls",
            Self::AttachFiles => "attach_files",
            Self::ProjectMap => "project_map",
            Self::LoopGuard => "loop_guard",
            Self::CompactTools => "compact_tools",
            Self::NarratedCalls => "narrated_calls",
            Self::UnchangedFiles => "unchanged_files",
            Self::RestateTask => "restate_task",
            Self::CallGrammar => "call_grammar",
            Self::BareCalls => "bare_calls",
            Self::AnswerRound => "answer_round",
            Self::WorkedExample => "worked_example",
            Self::AnswerDigest => "answer_digest",
            Self::CheckWrites => "check_writes",
            Self::AnswerEdits => "answer_edits",
            Self::LookupTerms => "lookup_terms",
            Self::CheckAnswerCode => "check_answer_code",
            Self::GroundHashes => "ground_hashes",
            Self::EditScope => "edit_scope",
        }
    }
}

/// Which assists are on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Assists {
    off: BTreeSet<Assist>,
}

impl Assists {
    /// Every assist but those in `off`.
    pub fn without(off: impl IntoIterator<Item = Assist>) -> Self {
        Self {
            off: off.into_iter().collect(),
        }
    }

    pub fn on(&self, assist: Assist) -> bool {
        !self.off.contains(&assist)
    }

    /// Turns `assist` off as well.
    pub fn turn_off(&mut self, assist: Assist) {
        self.off.insert(assist);
    }

    /// What the parser makes of an invented call.
    pub fn text_calls(&self) -> TextCalls {
        if self.on(Assist::TextCalls) {
            TextCalls::Take
        } else {
            TextCalls::Show
        }
    }

    /// The assists that are off, by id.
    pub fn off_ids(&self) -> Vec<&'static str> {
        self.off.iter().map(|a| a.id()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_assist_is_listed_and_explained_in_the_example_config() {
        let example = include_str!("../../config.example.toml");
        for assist in Assist::ALL {
            let line = format!("#   {}:", assist.id());
            assert!(example.contains(&line), "config.example.toml lacks {line}");
        }
        let ids: BTreeSet<&str> = Assist::ALL.iter().map(|a| a.id()).collect();
        assert_eq!(ids.len(), Assist::ALL.len(), "ids are distinct");
    }
}

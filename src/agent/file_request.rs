//! Asking for a file whole (the answer_edits assist). Asked to change or create a file it
//! names, Qwen2.5-Coder 0.5B calls a tool named after the code (`multiply`, `rename_function`,
//! `Cargo.toml`) until it is stopped, or writes an `edit_file` whose old text is not in the
//! file; asked instead for the file's new content in a request of its own (the file as it is,
//! the user's words, no tool block), it writes the file, as it writes code it is asked for.
//! Only the request is made up: the answer joins the history as a round of the turn, and the
//! block goes into the file by a `write_file` call under the permission policy (see
//! [`super::answer_edit::asked_file_write`]).

use hearth_backend::{CompletionRequest, ContentPart};
use hearth_conversation::{HistoryEntry, ToolCallRecord};

use super::request::{own_system, request_of_its_own};
use super::request_fit::RequestShape;
use super::unchanged::ChangeCheck;
use crate::context::{Budget, MESSAGE_OVERHEAD, TokenCounter};
use crate::tools::looks_secret;

const FILE_PROMPT: &str = include_str!("../../prompts/file_request.md");

/// Largest file asked for whole, in bytes: a small model rewriting more than this loses parts
/// of it, and on a CPU it takes minutes.
pub const ASKED_FILE_BYTES: usize = 12 * 1024;

/// Most tokens the file's answer may take.
const FILE_MAX_TOKENS: u32 = 4096;

/// A file to ask for: its name as the request wrote it, and what it holds (`None`: it does not
/// exist yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileAsk {
    pub name: String,
    pub held: Option<String>,
    /// Why the file the turn wrote must be written again (its parser's complaint): it is then
    /// asked for as a new file, with the complaint.
    pub broken: Option<String>,
}

/// The files one turn asks for whole, one request each, and the writes their answers made.
#[derive(Debug, Default)]
pub struct FileAsks {
    started: bool,
    pending: Vec<FileAsk>,
    current: Option<FileAsk>,
    writes: Vec<ToolCallRecord>,
}

impl FileAsks {
    /// Starts asking for the files `check` names (those small enough), once per turn; false
    /// when they were asked for already or none can be.
    pub fn start(&mut self, check: &ChangeCheck) -> bool {
        if self.started {
            return false;
        }
        self.started = true;
        let mut pending: Vec<FileAsk> = check
            .targets()
            .filter(|(name, _, held)| {
                // A file that may hold secrets is not sent whole to the model unasked by
                // hearth itself (the model's own read_file call would ask, in ask mode).
                !looks_secret(name) && held.is_none_or(|text| text.len() <= ASKED_FILE_BYTES)
            })
            .map(|(name, _, held)| FileAsk {
                name: name.to_string(),
                held: held.map(str::to_string),
                broken: None,
            })
            .collect();
        // Asked in the order named: the last is popped first.
        pending.reverse();
        self.pending = pending;
        !self.pending.is_empty()
    }

    /// Starts asking for one file the turn wrote and left broken, once per turn.
    pub fn start_with(&mut self, ask: FileAsk) -> bool {
        if self.started {
            return false;
        }
        self.started = true;
        self.pending = vec![ask];
        true
    }

    /// The next file's request, where one fits (a file that does not is skipped).
    pub fn next_request(
        &mut self,
        shape: &RequestShape<'_>,
        system_prompt: &str,
        turn: &[HistoryEntry],
        budget: &Budget,
    ) -> Option<CompletionRequest> {
        while let Some(ask) = self.pending.pop() {
            if let Some(request) = file_request(shape, system_prompt, turn, &ask, budget) {
                self.current = Some(ask);
                return Some(request);
            }
        }
        None
    }

    /// Whether the request about to be made asks for a file.
    pub fn asking(&self) -> bool {
        self.current.is_some()
    }

    /// The file the round just made was asked for, if it was one.
    pub fn answered(&mut self) -> Option<FileAsk> {
        self.current.take()
    }

    /// Keeps a write made from an answer.
    pub fn wrote(&mut self, call: ToolCallRecord) {
        self.writes.push(call);
    }

    pub fn more_to_ask(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The writes the answers made, to run.
    pub fn take_writes(&mut self) -> Vec<ToolCallRecord> {
        std::mem::take(&mut self.writes)
    }
}

/// The request that asks for `ask`'s complete content after the turn's request. `turn` is the
/// turn's entries, its prompt first; `system_prompt` the session's own. `None` when the turn
/// does not start with a prompt or the request does not fit the budget with room for the
/// file twice over.
fn file_request(
    shape: &RequestShape<'_>,
    system_prompt: &str,
    turn: &[HistoryEntry],
    ask: &FileAsk,
    budget: &Budget,
) -> Option<CompletionRequest> {
    let Some(HistoryEntry::User { content: prompt }) = turn.first() else {
        return None;
    };
    let system = own_system(FILE_PROMPT, system_prompt);
    let user = user_message(prompt, ask);
    let counter = shape
        .context
        .counter(shape.endpoint.backend.as_ref(), shape.model);
    let file_tokens = counter.count(ask.held.as_deref().unwrap_or(""));
    let asked = counter.count(&system)
        + user
            .iter()
            .map(|p| counter.count(part_text(p)))
            .sum::<usize>()
        + 2 * MESSAGE_OVERHEAD;
    // The answer holds the file again, a little longer.
    let answer = (file_tokens * 3 / 2 + 256) as u32;
    let max_tokens = budget
        .max_tokens
        .min(FILE_MAX_TOKENS)
        .max(answer.min(FILE_MAX_TOKENS));
    if asked + max_tokens as usize > budget.window as usize - budget.margin as usize {
        return None;
    }
    Some(request_of_its_own(
        shape,
        FILE_PROMPT,
        system_prompt,
        user,
        max_tokens,
    ))
}

/// The prompt's attached files and listing (the asked file's own block left out), the file as
/// it is, the user's words, and which file to write.
fn user_message(prompt: &[ContentPart], ask: &FileAsk) -> Vec<ContentPart> {
    let own_block = format!("<context file=\"{}\">", ask.name);
    let (context, words): (Vec<ContentPart>, Vec<ContentPart>) = prompt.iter().cloned().partition(
        |part| matches!(part, ContentPart::Text { text } if text.starts_with("<context ")),
    );
    let mut user: Vec<ContentPart> = context
        .into_iter()
        .filter(|part| !matches!(part, ContentPart::Text { text } if text.starts_with(&own_block)))
        .collect();
    let what = match &ask.held {
        Some(text) => {
            user.push(ContentPart::text(format!(
                "{own_block}\n{}\n</context>\n\n",
                text.trim_end_matches('\n')
            )));
            format!("the complete new content of {}", ask.name)
        }
        None => match &ask.broken {
            Some(complaint) => format!(
                "the complete content of {} again: as you wrote it, {complaint}. Write it",
                ask.name
            ),
            None => format!("the complete content of the new file {}", ask.name),
        },
    };
    user.extend(words);
    user.push(ContentPart::text(format!(
        "\n\nWrite {what}, in one fenced code block."
    )));
    user
}

/// A part's text; an image counts as none here (the prompt's images stay with the prompt).
fn part_text(part: &ContentPart) -> &str {
    match part {
        ContentPart::Text { text } => text,
        ContentPart::Image { .. } => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_as_it_is_goes_before_the_words_and_the_ask_comes_last() {
        let prompt = vec![
            ContentPart::text(
                "<context listing=\"project files\">\ncalc.py\nmain.py\n</context>\n\n",
            ),
            ContentPart::text("<context file=\"calc.py\">\nold\n</context>\n\n"),
            ContentPart::text("Rename calc_sum to total in calc.py and main.py."),
        ];
        let ask = FileAsk {
            name: "main.py".into(),
            held: Some("from calc import calc_sum\n".into()),
            broken: None,
        };
        let text: Vec<String> = user_message(&prompt, &ask)
            .iter()
            .map(|p| part_text(p).to_string())
            .collect();
        assert_eq!(
            text,
            [
                "<context listing=\"project files\">\ncalc.py\nmain.py\n</context>\n\n",
                "<context file=\"calc.py\">\nold\n</context>\n\n",
                "<context file=\"main.py\">\nfrom calc import calc_sum\n</context>\n\n",
                "Rename calc_sum to total in calc.py and main.py.",
                "\n\nWrite the complete new content of main.py, in one fenced code block.",
            ]
        );
        // The asked file's attached block is replaced, not repeated; a new file has none.
        let ask = FileAsk {
            name: "calc.py".into(),
            held: Some("def calc_sum(n):\n    return sum(n)\n".into()),
            broken: None,
        };
        let text: String = user_message(&prompt, &ask)
            .iter()
            .map(|p| part_text(p).to_string())
            .collect();
        assert_eq!(text.matches("<context file=\"calc.py\">").count(), 1);
        assert!(text.contains("def calc_sum(n)"));
        let ask = FileAsk {
            name: "tools.py".into(),
            held: None,
            broken: None,
        };
        let text: String = user_message(&prompt, &ask)
            .iter()
            .map(|p| part_text(p).to_string())
            .collect();
        assert!(text.ends_with(
            "Write the complete content of the new file tools.py, in one fenced code block."
        ));
    }
}

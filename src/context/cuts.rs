//! How far elision reaches: cut points chosen so the projection fits and its prefix holds.
//!
//! Each non-user entry before the protected tail gets a level: 0 verbatim, 1 tool output
//! elided, 2 reasoning dropped as well, 3 assistant prose and long call arguments elided as
//! well. Phase 1 elides outputs up to a cut; only when outputs up to the tail are all elided
//! and it still does not fit does phase 2 start on reasoning, then phase 3 on prose.
//!
//! Cuts are not taken at any entry but only at *checkpoints*: the entries where the running
//! token total of the history crosses a multiple of 1/4 of the room. The running total of an
//! append-only history never changes for entries already there, so the checkpoints stay put as
//! the history grows, the cut stays on the same checkpoint for several rounds (the prefix is
//! byte-stable, prefix caches hit), and when it moves it frees a quarter of the room at once.
//! Phase 1's cut only moves forward as the history grows, so an elided output stays elided.

use hearth_conversation::HistoryEntry;

use super::markers::{CallTargets, output_marker, prose_marker, shrink_arguments};
use super::slots::{Elision, ElisionKind, Slot};
use super::tokens::{TokenCounter, entry_tokens};

/// The protected tail may take up to 1/TAIL_SHARE of the room (it always holds the last round).
const TAIL_SHARE: usize = 4;

/// Checkpoints every 1/CHECKPOINTS of the room.
const CHECKPOINTS: usize = 4;

/// The deepest level (prose elided).
const MAX_LEVEL: usize = 3;

/// What elision did.
pub(super) struct Plan {
    pub elided: Vec<Elision>,
    /// Start of the protected tail, relative to the first elidable slot.
    pub tail: usize,
}

/// Elides `slots[first..]` until they fit `room` together with `slots[..first]`, or until
/// everything before the tail is at the deepest level.
pub(super) fn elide(
    slots: &mut [Slot],
    first: usize,
    room: usize,
    counter: &dyn TokenCounter,
    targets: &CallTargets,
) -> Plan {
    let fixed: usize = slots[..first].iter().map(|s| s.tokens).sum();
    let region = &mut slots[first..];
    let costs: Vec<[usize; MAX_LEVEL + 1]> = region
        .iter()
        .map(|s| level_costs(s, counter, targets))
        .collect();
    let tail = tail_start(region, room);
    let candidates = checkpoints(&costs, tail, room);
    let mut cuts = [0usize; MAX_LEVEL];
    for phase in 0..MAX_LEVEL {
        let fitting = candidates.iter().copied().find(|&c| {
            cuts[phase] = c;
            fixed + total_at(&costs, &cuts) <= room
        });
        match fitting {
            Some(c) => {
                cuts[phase] = c;
                break;
            }
            None => cuts[phase] = tail,
        }
    }
    let mut elided = Vec::new();
    for (i, slot) in region.iter_mut().enumerate() {
        // A marker longer than what it replaces is not used: step down to the level whose
        // rendering the cost table counted.
        let mut level = level_of(i, &cuts);
        while level > 0 {
            let candidate = at_level(&slot.entry, level, targets);
            let tokens = entry_tokens(&candidate, counter);
            if tokens <= costs[i][level] {
                if tokens < slot.tokens {
                    record(slot, &costs[i], level, &mut elided);
                    slot.entry = candidate;
                    slot.tokens = tokens;
                }
                break;
            }
            level -= 1;
        }
    }
    Plan { elided, tail }
}

/// Level of the entry at `i`: how many phase cuts lie beyond it.
fn level_of(i: usize, cuts: &[usize; MAX_LEVEL]) -> usize {
    cuts.iter().filter(|&&c| c > i).count()
}

fn total_at(costs: &[[usize; MAX_LEVEL + 1]], cuts: &[usize; MAX_LEVEL]) -> usize {
    costs
        .iter()
        .enumerate()
        .map(|(i, c)| c[level_of(i, cuts)])
        .sum()
}

/// The tail kept verbatim: the last round (from the last assistant message on), extended
/// backwards while it stays within 1/TAIL_SHARE of the room.
fn tail_start(region: &[Slot], room: usize) -> usize {
    let last_round = region
        .iter()
        .rposition(|s| matches!(s.entry, HistoryEntry::Assistant { .. }))
        .unwrap_or(region.len());
    let mut start = last_round;
    let mut tokens: usize = region[start..].iter().map(|s| s.tokens).sum();
    while start > 0 && tokens + region[start - 1].tokens <= room / TAIL_SHARE {
        start -= 1;
        tokens += region[start].tokens;
    }
    start
}

/// Cut candidates in increasing order: 0, every checkpoint up to the tail, and the tail.
fn checkpoints(costs: &[[usize; MAX_LEVEL + 1]], tail: usize, room: usize) -> Vec<usize> {
    let chunk = (room / CHECKPOINTS).max(1);
    let mut out = vec![0];
    let mut running = 0usize;
    for (i, c) in costs.iter().enumerate().take(tail) {
        let before = running / chunk;
        running += c[0];
        if running / chunk > before && i + 1 < tail {
            out.push(i + 1);
        }
    }
    if tail > 0 {
        out.push(tail);
    }
    out
}

/// Tokens of one slot at each level.
fn level_costs(
    slot: &Slot,
    counter: &dyn TokenCounter,
    targets: &CallTargets,
) -> [usize; MAX_LEVEL + 1] {
    let full = slot.tokens;
    match &slot.entry {
        HistoryEntry::User { .. } => [full; MAX_LEVEL + 1],
        HistoryEntry::ToolResult { .. } => {
            let elided = entry_tokens(&at_level(&slot.entry, 1, targets), counter).min(full);
            [full, elided, elided, elided]
        }
        HistoryEntry::Assistant { .. } => {
            let no_reasoning = entry_tokens(&at_level(&slot.entry, 2, targets), counter).min(full);
            let no_prose =
                entry_tokens(&at_level(&slot.entry, 3, targets), counter).min(no_reasoning);
            [full, full, no_reasoning, no_prose]
        }
    }
}

/// `entry` with everything its level elides replaced by markers.
pub(super) fn at_level(entry: &HistoryEntry, level: usize, targets: &CallTargets) -> HistoryEntry {
    match entry {
        HistoryEntry::User { .. } => entry.clone(),
        HistoryEntry::ToolResult {
            call_id,
            name,
            output,
            is_error,
        } if level >= 1 => HistoryEntry::ToolResult {
            call_id: call_id.clone(),
            name: name.clone(),
            output: output_marker(call_id, name, output, targets),
            is_error: *is_error,
        },
        HistoryEntry::ToolResult { .. } => entry.clone(),
        HistoryEntry::Assistant {
            text,
            reasoning,
            tool_calls,
        } => {
            // Dropped, not marked: chat templates already drop reasoning of earlier turns, and
            // a marker inside a think block tells the model nothing.
            let reasoning = if level >= 2 { None } else { reasoning.clone() };
            let (text, tool_calls) = if level >= 3 {
                let text = if text.is_empty() {
                    String::new()
                } else {
                    prose_marker(text)
                };
                let calls = tool_calls
                    .iter()
                    .map(|c| {
                        let mut c = c.clone();
                        c.arguments = shrink_arguments(&c.arguments);
                        c
                    })
                    .collect();
                (text, calls)
            } else {
                (text.clone(), tool_calls.clone())
            };
            HistoryEntry::Assistant {
                text,
                reasoning,
                tool_calls,
            }
        }
    }
}

fn record(slot: &Slot, costs: &[usize; MAX_LEVEL + 1], level: usize, out: &mut Vec<Elision>) {
    let Some(index) = slot.index() else {
        return;
    };
    let mut push = |kind, saved: usize| {
        out.push(Elision {
            index,
            kind,
            tokens_saved: saved,
        });
    };
    match &slot.entry {
        HistoryEntry::User { .. } => {}
        HistoryEntry::ToolResult { .. } => push(ElisionKind::ToolOutput, costs[0] - costs[1]),
        HistoryEntry::Assistant {
            text, reasoning, ..
        } => {
            if level >= 2 && reasoning.is_some() {
                push(ElisionKind::Reasoning, costs[1] - costs[2]);
            }
            if level >= 3 && (!text.is_empty() || costs[3] < costs[2]) {
                push(ElisionKind::AssistantText, costs[2] - costs[3]);
            }
        }
    }
}

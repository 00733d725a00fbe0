//! The last resort, when elision before the tail is not enough: cut into the recent tail and
//! the user messages so the request still fits. Order: the largest recent tool outputs
//! (truncated, head and tail kept), recent assistant messages (elided like old ones), any user
//! message larger than half the room, then whole old exchanges (an assistant message with its
//! tool results, so pairs stay whole), and finally the user messages, largest first.

use hearth_backend::ContentPart;
use hearth_conversation::HistoryEntry;

use super::cuts::at_level;
use super::markers::{CallTargets, SUMMARY_PREFIX, truncate_to_tokens};
use super::slots::{Elision, ElisionKind, Origin, Slot, total};
use super::tokens::{TokenCounter, entry_tokens};

/// Text that replaces an image cut from a user message.
const IMAGE_MARKER: &str = "[image elided to fit the context window]";

/// Squeezes `slots` into `room`; `tail` is the first slot of the protected tail.
pub(super) fn squeeze(
    slots: &mut Vec<Slot>,
    tail: usize,
    room: usize,
    counter: &dyn TokenCounter,
    targets: &CallTargets,
) -> Vec<Elision> {
    let mut elided = Vec::new();
    truncate_tail_outputs(slots, tail, room, counter, &mut elided);
    for i in tail..slots.len() {
        if total(slots) <= room {
            return elided;
        }
        if matches!(slots[i].entry, HistoryEntry::Assistant { .. }) && slots[i].index().is_some() {
            let entry = at_level(&slots[i].entry, 3, targets);
            replace(
                &mut slots[i],
                entry,
                ElisionKind::AssistantText,
                counter,
                &mut elided,
            );
        }
    }
    truncate_users(slots, room, Some(room / 2), counter, &mut elided);
    drop_exchanges(slots, room, &mut elided);
    truncate_users(slots, room, None, counter, &mut elided);
    elided
}

/// Puts `entry` in `slot` if it is smaller, recording the saving.
fn replace(
    slot: &mut Slot,
    entry: HistoryEntry,
    kind: ElisionKind,
    counter: &dyn TokenCounter,
    elided: &mut Vec<Elision>,
) {
    let tokens = entry_tokens(&entry, counter);
    if tokens >= slot.tokens {
        return;
    }
    if let Some(index) = slot.index() {
        elided.push(Elision {
            index,
            kind,
            tokens_saved: slot.tokens - tokens,
        });
    }
    slot.entry = entry;
    slot.tokens = tokens;
}

fn truncate_tail_outputs(
    slots: &mut [Slot],
    tail: usize,
    room: usize,
    counter: &dyn TokenCounter,
    elided: &mut Vec<Elision>,
) {
    let mut order: Vec<usize> = (tail..slots.len())
        .filter(|&i| matches!(slots[i].entry, HistoryEntry::ToolResult { .. }))
        .collect();
    // Largest first; ties oldest first, so the order is a function of the history alone.
    order.sort_by_key(|&i| (std::cmp::Reverse(slots[i].tokens), i));
    for i in order {
        let excess = total(slots).saturating_sub(room);
        if excess == 0 {
            return;
        }
        let HistoryEntry::ToolResult {
            call_id,
            name,
            output,
            is_error,
        } = &slots[i].entry
        else {
            continue;
        };
        let target = counter.count(output).saturating_sub(excess);
        let entry = HistoryEntry::ToolResult {
            call_id: call_id.clone(),
            name: name.clone(),
            output: truncate_to_tokens(output, target, counter),
            is_error: *is_error,
        };
        replace(
            &mut slots[i],
            entry,
            ElisionKind::Truncated,
            counter,
            elided,
        );
    }
}

/// Cuts user messages (the summary's too), largest first, each to at most `cap` tokens when
/// given, else as far as the excess needs.
fn truncate_users(
    slots: &mut [Slot],
    room: usize,
    cap: Option<usize>,
    counter: &dyn TokenCounter,
    elided: &mut Vec<Elision>,
) {
    let mut order: Vec<usize> = (0..slots.len()).filter(|&i| slots[i].is_user()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(slots[i].tokens), i));
    for i in order {
        let excess = total(slots).saturating_sub(room);
        if excess == 0 {
            return;
        }
        let target = match cap {
            Some(cap) if slots[i].tokens <= cap => continue,
            Some(cap) => cap,
            None => slots[i].tokens.saturating_sub(excess),
        };
        let HistoryEntry::User { content } = &slots[i].entry else {
            continue;
        };
        let overhead = slots[i].tokens - super::tokens::content_tokens(content, counter);
        let target = target.saturating_sub(overhead);
        let content = if slots[i].origin == Origin::Summary {
            cut_summary(content, target, counter)
        } else {
            cut_content(content, target, counter)
        };
        let entry = HistoryEntry::User { content };
        replace(
            &mut slots[i],
            entry,
            ElisionKind::Truncated,
            counter,
            elided,
        );
    }
}

/// The summary cut to `target` tokens behind its prefix, which stays recognisable.
fn cut_summary(
    content: &[ContentPart],
    target: usize,
    counter: &dyn TokenCounter,
) -> Vec<ContentPart> {
    let text: String = content
        .iter()
        .filter_map(|p| match p {
            ContentPart::Text { text } => Some(text.as_str()),
            ContentPart::Image { .. } => None,
        })
        .collect();
    let body = text.strip_prefix(SUMMARY_PREFIX).unwrap_or(&text);
    let room = target.saturating_sub(counter.count(SUMMARY_PREFIX));
    vec![ContentPart::text(format!(
        "{SUMMARY_PREFIX}{}",
        truncate_to_tokens(body, room, counter)
    ))]
}

/// A user message's parts cut to `target` tokens: images first, then the longest texts.
fn cut_content(
    content: &[ContentPart],
    target: usize,
    counter: &dyn TokenCounter,
) -> Vec<ContentPart> {
    let mut parts = content.to_vec();
    let cost = |parts: &[ContentPart]| super::tokens::content_tokens(parts, counter);
    for i in 0..parts.len() {
        if cost(&parts) <= target {
            return parts;
        }
        if matches!(parts[i], ContentPart::Image { .. }) {
            parts[i] = ContentPart::text(IMAGE_MARKER);
        }
    }
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by_key(|&i| match &parts[i] {
        ContentPart::Text { text } => (std::cmp::Reverse(text.len()), i),
        ContentPart::Image { .. } => (std::cmp::Reverse(0), i),
    });
    for i in order {
        let excess = cost(&parts).saturating_sub(target);
        if excess == 0 {
            break;
        }
        if let ContentPart::Text { text } = &parts[i] {
            let keep = counter.count(text).saturating_sub(excess);
            parts[i] = ContentPart::text(truncate_to_tokens(text, keep, counter));
        }
    }
    parts
}

/// Leaves out whole exchanges, oldest first, until the slots fit: an assistant message with
/// the tool results that follow it (or a lone result), never a user message or the summary.
fn drop_exchanges(slots: &mut Vec<Slot>, room: usize, elided: &mut Vec<Elision>) {
    let mut keep = vec![true; slots.len()];
    let mut tokens = total(slots);
    let mut i = 0;
    while i < slots.len() && tokens > room {
        let starts_exchange = slots[i].index().is_some() && !slots[i].is_user();
        if !starts_exchange {
            i += 1;
            continue;
        }
        let mut end = i + 1;
        while end < slots.len() && matches!(slots[end].entry, HistoryEntry::ToolResult { .. }) {
            end += 1;
        }
        for j in i..end {
            keep[j] = false;
            tokens -= slots[j].tokens;
            if let Some(index) = slots[j].index() {
                elided.push(Elision {
                    index,
                    kind: ElisionKind::Dropped,
                    tokens_saved: slots[j].tokens,
                });
            }
        }
        i = end;
    }
    let mut flags = keep.into_iter();
    slots.retain(|_| flags.next().unwrap_or(true));
}

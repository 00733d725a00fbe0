use std::collections::HashSet;

use hearth_backend::ContentPart;
use proptest::prelude::*;

use super::*;
use crate::context::estimator::CalibratedEstimator;
use crate::context::slots::ElisionKind;
use crate::context::test_support::{
    CharCounter, RoundSpec, build, code, round_spec, tool_round, user,
};
use crate::context::test_tokenizer::qwen_counter;
use crate::context::tokens::history_tokens;

/// Checks every invariant of one projection; returns it for further checks.
fn check(
    history: &[HistoryEntry],
    system_tokens: usize,
    budget: &Budget,
    counter: &dyn TokenCounter,
    summary: Option<&Summary>,
) -> Projection {
    let before = history.to_vec();
    let p = project(history, system_tokens, budget, counter, summary);
    assert_eq!(history, &before[..], "the stored history changed");
    // Always within budget, and the reported count is the count of what is sent.
    assert!(
        p.fits,
        "does not fit: {} > {}",
        p.tokens,
        budget.available()
    );
    assert!(p.tokens <= budget.available());
    assert_eq!(
        p.tokens,
        system_tokens + history_tokens(&p.entries, counter)
    );
    // Every call keeps its result, after it; no result without its call.
    let mut open: HashSet<String> = HashSet::new();
    let mut calls = 0;
    for entry in &p.entries {
        match entry {
            HistoryEntry::Assistant { tool_calls, .. } => {
                assert!(open.is_empty(), "calls left without results: {open:?}");
                for call in tool_calls {
                    open.insert(call.id.to_string());
                    calls += 1;
                }
            }
            HistoryEntry::ToolResult { call_id, .. } => {
                assert!(open.remove(call_id.as_str()), "orphan result {call_id}");
            }
            HistoryEntry::User { .. } => assert!(open.is_empty()),
        }
    }
    assert!(open.is_empty(), "calls left without results: {open:?}");
    let _ = calls;
    // Every user message is there, in order: verbatim or truncated with a marker.
    let kept: Vec<&HistoryEntry> = p
        .entries
        .iter()
        .filter(|e| matches!(e, HistoryEntry::User { .. }))
        .filter(|e| !first_text(e).starts_with(SUMMARY_PREFIX))
        .collect();
    let original: Vec<&HistoryEntry> = history
        .iter()
        .filter(|e| matches!(e, HistoryEntry::User { .. }))
        .collect();
    assert_eq!(kept.len(), original.len(), "a user message was dropped");
    for (k, o) in kept.iter().zip(&original) {
        if k != o {
            let text = all_text(k);
            assert!(
                text.contains("truncated to fit") || text.contains("image elided"),
                "user message changed without a marker"
            );
        }
    }
    // Deterministic.
    assert_eq!(p, project(history, system_tokens, budget, counter, summary));
    p
}

fn first_text(entry: &HistoryEntry) -> &str {
    match entry {
        HistoryEntry::User { content } => match content.first() {
            Some(ContentPart::Text { text }) => text,
            _ => "",
        },
        _ => "",
    }
}

fn all_text(entry: &HistoryEntry) -> String {
    match entry {
        HistoryEntry::User { content } => content
            .iter()
            .map(|p| match p {
                ContentPart::Text { text } => text.as_str(),
                ContentPart::Image { .. } => "",
            })
            .collect(),
        _ => String::new(),
    }
}

fn budget_strategy() -> impl Strategy<Value = (Budget, usize)> {
    (
        prop_oneof![Just(4096u32), Just(8192), Just(32_768)],
        256u32..2048,
    )
        .prop_flat_map(|(window, max_tokens)| {
            let budget = Budget::new(window, max_tokens);
            (Just(budget), 0..=budget.available() / 4)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn projection_invariants_hold(
        rounds in prop::collection::vec(round_spec(), 0..40),
        (budget, system_tokens) in budget_strategy(),
        estimate in any::<bool>(),
        summary_at in prop::option::of(0.0f64..1.0),
    ) {
        let history = build(&rounds);
        let estimator = CalibratedEstimator::default();
        let counter: &dyn TokenCounter = if estimate { &estimator } else { &CharCounter };
        let summary = summary_at.map(|f| Summary {
            covers: (history.len() as f64 * f) as usize,
            text: format!("Goal: fix the build.\n{}", code(5, 7)),
        });
        check(&history, system_tokens, &budget, counter, summary.as_ref());
    }

}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn successive_rounds_keep_the_prefix(
        rounds in prop::collection::vec(round_spec(), 2..24),
        (budget, system_tokens) in budget_strategy(),
    ) {
        let counter = CalibratedEstimator::default();
        let history = build(&rounds);
        // Cut the history after each round's results, as the turn loop sees it.
        let ends: Vec<usize> = (1..=history.len())
            .filter(|&i| !matches!(history.get(i), Some(HistoryEntry::ToolResult { .. })))
            .collect();
        let mut previous: Option<(usize, Projection)> = None;
        for end in ends {
            let p = check(&history[..end], system_tokens, &budget, &counter, None);
            if let Some((prev_end, prev)) = &previous {
                let last_resort = |p: &Projection| p.elided.iter().any(|e| {
                    matches!(e.kind, ElisionKind::Truncated | ElisionKind::Dropped)
                });
                let old: Vec<&Elision> =
                    p.elided.iter().filter(|e| e.index < *prev_end).collect();
                let same = old.len() == prev.elided.len()
                    && old.iter().zip(&prev.elided).all(|(a, b)| *a == b);
                if same && !last_resort(prev) && !last_resort(&p) {
                    prop_assert_eq!(&p.entries[..prev.entries.len()], &prev.entries[..]);
                }
                // Phase 1 only (outputs): what was elided stays elided.
                let outputs_only = |p: &Projection| {
                    p.elided.iter().all(|e| e.kind == ElisionKind::ToolOutput)
                };
                if outputs_only(prev) && outputs_only(&p) {
                    let now: HashSet<usize> = p.elided.iter().map(|e| e.index).collect();
                    for e in &prev.elided {
                        prop_assert!(now.contains(&e.index), "entry {} came back", e.index);
                    }
                }
            }
            previous = Some((end, p));
        }
    }
}

#[test]
fn invariants_hold_by_the_real_tokenizer() {
    let Some(counter) = qwen_counter() else {
        return;
    };
    // Few, smaller cases: the tokenizer is slow in debug builds.
    let config = ProptestConfig {
        cases: 5,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let mut runner = proptest::test_runner::TestRunner::new(config);
    let strategy = (
        prop::collection::vec(round_spec(), 0..24),
        budget_strategy(),
    );
    runner
        .run(&strategy, |(rounds, (budget, system_tokens))| {
            let mut rounds: Vec<RoundSpec> = rounds;
            for round in &mut rounds {
                round
                    .outputs
                    .iter_mut()
                    .for_each(|lines| *lines = (*lines).min(250));
            }
            let history = build(&rounds);
            let p = check(&history, system_tokens, &budget, counter, None);
            // Counted whole as ChatML, the prompt is no larger than counted by pieces.
            let whole = counter.count(&chatml(&p.entries));
            prop_assert!(whole + system_tokens <= budget.available());
            prop_assert!(whole <= p.tokens - system_tokens);
            Ok(())
        })
        .unwrap();
}

/// The entries as ChatML text with Hermes tool calls, as Qwen templates render them.
fn chatml(entries: &[HistoryEntry]) -> String {
    let mut out = String::new();
    for entry in entries {
        match entry {
            HistoryEntry::User { content } => {
                let text: String = content
                    .iter()
                    .map(|p| match p {
                        ContentPart::Text { text } => text.clone(),
                        ContentPart::Image { .. } => {
                            "<|vision_start|><|image_pad|><|vision_end|>".into()
                        }
                    })
                    .collect();
                out.push_str(&format!("<|im_start|>user\n{text}<|im_end|>\n"));
            }
            HistoryEntry::Assistant {
                text,
                reasoning,
                tool_calls,
            } => {
                out.push_str("<|im_start|>assistant\n");
                if let Some(r) = reasoning {
                    out.push_str(&format!("<think>\n{r}\n</think>\n\n"));
                }
                out.push_str(text);
                for c in tool_calls {
                    out.push_str(&format!(
                        "\n<tool_call>\n{{\"name\": \"{}\", \"arguments\": {}}}\n</tool_call>",
                        c.name, c.arguments
                    ));
                }
                out.push_str("<|im_end|>\n");
            }
            HistoryEntry::ToolResult { output, .. } => out.push_str(&format!(
                "<|im_start|>user\n<tool_response>\n{output}\n</tool_response><|im_end|>\n"
            )),
        }
    }
    out
}

#[test]
fn a_small_history_is_sent_verbatim() {
    let mut history = vec![user("hello")];
    history.extend(tool_round(0, "Reading it.", Some("think"), &[10]));
    let budget = Budget::new(32_768, 4096);
    let p = check(&history, 500, &budget, &CharCounter, None);
    assert_eq!(p.entries, history);
    assert!(p.elided.is_empty());
}

#[test]
fn old_outputs_go_first_with_a_marker_and_the_tail_stays() {
    let mut history = vec![user("fix it")];
    for n in 0..12 {
        history.extend(tool_round(n, "Next file.", Some("hmm"), &[240]));
    }
    let budget = Budget::new(32_768, 4096);
    let p = check(&history, 1000, &budget, &CharCounter, None);
    assert!(!p.elided.is_empty());
    assert!(p.elided.iter().all(|e| e.kind == ElisionKind::ToolOutput));
    let HistoryEntry::ToolResult { output, .. } = &p.entries[2] else {
        panic!("expected a tool result");
    };
    assert_eq!(
        output,
        "[output of read_file src/file_0_0.rs elided: 240 lines]"
    );
    // The last round is verbatim, reasoning everywhere is kept.
    assert_eq!(p.entries.last(), history.last());
    assert!(p.entries.iter().all(|e| match e {
        HistoryEntry::Assistant { reasoning, .. } => reasoning.is_some(),
        _ => true,
    }));
}

#[test]
fn reasoning_then_prose_go_when_outputs_are_not_enough() {
    let mut history = vec![user("fix it")];
    for n in 0..30 {
        let prose = code(20, n);
        let reasoning = code(40, 100 + n);
        history.extend(tool_round(n, &prose, Some(&reasoning), &[5]));
    }
    let budget = Budget::new(32_768, 4096);
    let p = check(&history, 1000, &budget, &CharCounter, None);
    let kinds: HashSet<ElisionKind> = p.elided.iter().map(|e| e.kind).collect();
    assert!(kinds.contains(&ElisionKind::Reasoning));
    let first_reasoning = p
        .elided
        .iter()
        .find(|e| e.kind == ElisionKind::Reasoning)
        .unwrap();
    // Reasoning is dropped only where outputs are elided too.
    assert!(
        p.elided
            .iter()
            .any(|e| e.kind == ElisionKind::ToolOutput && e.index == first_reasoning.index + 1)
    );
}

#[test]
fn one_huge_output_in_the_tail_is_truncated_to_fit() {
    let mut history = vec![user("read the log")];
    history.extend(tool_round(0, "", None, &[20_000]));
    let budget = Budget::new(8192, 1024);
    let p = check(&history, 800, &budget, &CharCounter, None);
    assert!(p.elided.iter().any(|e| e.kind == ElisionKind::Truncated));
    let HistoryEntry::ToolResult { output, .. } = p.entries.last().unwrap() else {
        panic!("expected a tool result");
    };
    assert!(output.starts_with("    let value_"));
    assert!(output.contains("lines truncated to fit the context window"));
}

#[test]
fn one_huge_user_message_is_truncated_not_dropped() {
    let history = vec![
        user(code(5000, 1)),
        HistoryEntry::Assistant {
            text: "ok".into(),
            reasoning: None,
            tool_calls: Vec::new(),
        },
    ];
    let budget = Budget::new(4096, 512);
    let p = check(&history, 100, &budget, &CharCounter, None);
    assert!(all_text(&p.entries[0]).contains("truncated to fit"));
}

#[test]
fn a_summary_replaces_its_span_and_keeps_user_messages() {
    let mut history = vec![user("first request")];
    history.extend(tool_round(0, "a", None, &[50]));
    history.push(user("second request"));
    history.extend(tool_round(1, "b", None, &[50]));
    history.extend(tool_round(2, "c", None, &[5]));
    // Covers up to the middle of round 1's results: moved past them.
    let summary = Summary {
        covers: 5,
        text: "We fixed the parser.".into(),
    };
    let p = check(
        &history,
        0,
        &Budget::new(32_768, 4096),
        &CharCounter,
        Some(&summary),
    );
    assert_eq!(p.summary_covers, Some(6));
    assert_eq!(p.entries[0], history[0]);
    assert_eq!(p.entries[1], history[3]);
    assert_eq!(
        first_text(&p.entries[2]),
        format!("{SUMMARY_PREFIX}We fixed the parser.")
    );
    assert_eq!(&p.entries[4..], &history[6..]);
}

#[test]
fn a_steady_session_breaks_its_prefix_rarely() {
    let budget = Budget::new(32_768, 4096);
    let counter = CalibratedEstimator::default();
    let mut history = vec![user("refactor the crate")];
    let mut previous: Option<Projection> = None;
    let (mut rounds, mut breaks) = (0, 0);
    for n in 0..60 {
        history.extend(tool_round(n, "Looking at the next file.", None, &[60]));
        let p = check(&history, 2000, &budget, &counter, None);
        if let Some(prev) = &previous {
            rounds += 1;
            if p.entries[..prev.entries.len()] != prev.entries[..] {
                breaks += 1;
            }
        }
        previous = Some(p);
    }
    let last = previous.unwrap();
    assert!(!last.elided.is_empty(), "the session should need elision");
    // Cut points move a checkpoint at a time, so most rounds extend the previous prompt.
    assert!(
        breaks * 4 <= rounds,
        "{breaks} prefix breaks in {rounds} rounds"
    );
}

#[test]
fn a_squeezed_summary_keeps_its_prefix() {
    let mut history = vec![user("first")];
    history.extend(tool_round(0, "a", None, &[10]));
    history.push(user("second"));
    let summary = Summary {
        covers: 3,
        text: code(400, 3),
    };
    let p = check(
        &history,
        0,
        &Budget::new(4096, 1024),
        &CharCounter,
        Some(&summary),
    );
    let text = first_text(&p.entries[1]);
    assert!(text.starts_with(SUMMARY_PREFIX));
    assert!(text.contains("truncated to fit"));
    assert_eq!(p.entries[0], history[0]);
    assert_eq!(p.entries.last(), history.last());
}

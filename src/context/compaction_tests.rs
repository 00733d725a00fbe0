use hearth_backend::Role;

use super::*;
use crate::context::estimator::CalibratedEstimator;
use crate::context::test_support::{CharCounter, tool_round, user};

fn request_tokens(messages: &[Message], counter: &dyn TokenCounter) -> usize {
    messages
        .iter()
        .map(|m| counter.count(&m.plain_text()) + MESSAGE_OVERHEAD)
        .sum()
}

fn long_session(rounds: usize, lines: usize) -> Vec<HistoryEntry> {
    let mut history = vec![user("Port the parser to the new tokenizer API.")];
    for n in 0..rounds {
        if n % 10 == 5 {
            history.push(user(format!("Also keep the old API working (note {n}).")));
        }
        history.extend(tool_round(n, "Reading on.", Some("Plan."), &[lines]));
    }
    history
}

#[test]
fn triggers_at_the_threshold() {
    assert!(!should_compact(26_213, 32_768, DEFAULT_COMPACT_THRESHOLD));
    assert!(should_compact(26_215, 32_768, DEFAULT_COMPACT_THRESHOLD));
    assert!(should_compact(9_000, 10_000, 0.9));
    assert!(!should_compact(8_999, 10_000, 0.9));
    assert!(!should_compact(100, 0, 0.8));
}

#[test]
fn span_ends_after_the_elided_part_and_never_loops() {
    let history = long_session(40, 200);
    let budget = Budget::new(32_768, 4096);
    let counter = CalibratedEstimator::default();
    let p = project(&history, 1000, &budget, &counter, None);
    let covers = compaction_span(&history, &p, None).unwrap();
    let last_elided = p.elided.iter().map(|e| e.index).max().unwrap();
    assert!(covers > last_elided);
    assert!(!matches!(history[covers], HistoryEntry::ToolResult { .. }));
    // After compacting, the same span again is refused: nothing new to summarise.
    let summary = Summary {
        covers,
        text: "summary".into(),
    };
    let with = project(&history, 1000, &budget, &counter, Some(&summary));
    assert!(with.tokens <= p.tokens);
    assert_eq!(compaction_span(&history, &with, Some(&summary)), None);
    // A history that fits has nothing to compact.
    let short = long_session(2, 10);
    let p = project(&short, 1000, &budget, &counter, None);
    assert_eq!(compaction_span(&short, &p, None), None);
}

#[test]
fn automatic_compaction_waits_for_a_worthwhile_gain() {
    let budget = Budget::new(32_768, 4096);
    let counter = CalibratedEstimator::default();
    // Grow the session until elision starts: the first elisions save little, so no span yet.
    let mut history = long_session(0, 0);
    let mut first_elision = None;
    for n in 0..200 {
        history.extend(tool_round(n, "More.", None, &[40]));
        let p = project(&history, 1000, &budget, &counter, None);
        if !p.elided.is_empty() && first_elision.is_none() {
            first_elision = Some(n);
            assert!(should_compact(
                p.unelided_tokens,
                budget.window,
                DEFAULT_COMPACT_THRESHOLD
            ));
            assert_eq!(compaction_span(&history, &p, None), None);
        }
        if let Some(covers) = compaction_span(&history, &p, None) {
            assert!(n > first_elision.unwrap());
            let saved: usize = p.elided.iter().map(|e| e.tokens_saved).sum();
            assert!(saved >= p.tokens);
            assert!(covers >= p.tail_start);
            assert!(covers <= history.len());
            return;
        }
    }
    panic!("compaction never became worthwhile");
}

#[test]
fn on_demand_span_keeps_the_last_round() {
    let history = long_session(5, 10);
    let last_assistant = history
        .iter()
        .rposition(|e| matches!(e, HistoryEntry::Assistant { .. }))
        .unwrap();
    assert_eq!(on_demand_span(&history, None), Some(last_assistant));
    let done = Summary {
        covers: last_assistant,
        text: String::new(),
    };
    assert_eq!(on_demand_span(&history, Some(&done)), None);
    assert_eq!(on_demand_span(&[user("hi")], None), None);
}

#[test]
fn the_summary_request_fits_its_budget_for_a_huge_span() {
    let history = long_session(120, 1500);
    for counter in [
        &CharCounter as &dyn TokenCounter,
        &CalibratedEstimator::default(),
    ] {
        let budget = Budget::new(8192, 1024);
        let messages =
            build_summary_request(&history, None, Some("the tokenizer"), &budget, counter);
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0].role, Role::System);
        assert_eq!(messages[0].plain_text(), COMPACT_PROMPT);
        let text = messages[1].plain_text();
        assert!(text.contains("Port the parser to the new tokenizer API."));
        assert!(text.contains("Also keep the old API working (note 115)."));
        assert!(text.ends_with("The user asked to focus on: the tokenizer"));
        let tokens = request_tokens(&messages, counter);
        assert!(
            tokens <= budget.available(),
            "{tokens} > {}",
            budget.available()
        );
    }
}

#[test]
fn the_summary_request_builds_on_the_previous_summary() {
    let history = long_session(30, 100);
    let previous = Summary {
        covers: 20,
        text: "Earlier: renamed Lexer to Scanner in src/scan.rs.".into(),
    };
    let budget = Budget::new(32_768, 2048);
    let messages = build_summary_request(&history, Some(&previous), None, &budget, &CharCounter);
    let text = messages[1].plain_text();
    assert!(text.contains("renamed Lexer to Scanner in src/scan.rs"));
    assert!(text.ends_with("Write the handover note now."));
    assert!(request_tokens(&messages, &CharCounter) <= budget.available());
}

#[test]
fn the_prompt_names_the_five_parts() {
    for heading in [
        "## Goal",
        "## Progress and decisions",
        "## Constraints",
        "## Remaining steps",
        "## Critical files and names",
    ] {
        assert!(COMPACT_PROMPT.contains(heading), "{heading}");
    }
}

//! Figures, not a check: prompt tokens per round of a scripted 50-round tool-heavy session in
//! a 32k window, with and without projection, and what a summary request costs.
//! Run: `cargo test --lib context::figures -- --ignored --nocapture`.

use hearth_backend::Message;

use super::compaction::{
    DEFAULT_COMPACT_THRESHOLD, build_summary_request, compaction_span, should_compact,
};
use super::estimator::CalibratedEstimator;
use super::projection::project;
use super::summary::Summary;
use super::test_support::{code, tool_round, user};
use super::test_tokenizer::qwen_counter;
use super::tokens::{Budget, MESSAGE_OVERHEAD, TokenCounter, history_tokens};

const SYSTEM_TOKENS: usize = 2500;

/// Output lengths in lines (≈ 20 tokens a line) cycled over the session's tool calls.
const OUTPUT_LINES: [usize; 7] = [120, 40, 300, 60, 15, 200, 80];

#[test]
#[ignore = "prints figures"]
fn figures_prompt_tokens_per_round() {
    println!("== counted by the calibrated estimate (uncalibrated start)");
    session(&CalibratedEstimator::default());
    with_compaction(&CalibratedEstimator::default());
    if let Some(qwen) = qwen_counter() {
        println!("== counted by the Qwen2.5 tokenizer");
        session(qwen);
        with_compaction(qwen);
    }
}

fn session(counter: &dyn TokenCounter) {
    let budget = Budget::new(32_768, 4096);
    let mut history = Vec::new();
    let mut previous: Option<Vec<hearth_conversation::HistoryEntry>> = None;
    let (mut sent_raw, mut sent_projected, mut over_window, mut breaks) = (0, 0, 0, 0);
    let mut reused = 0usize;
    println!("round  raw_prompt  projected  elided  prefix_reused");
    for round in 0..50 {
        history = scripted(round + 1);
        let raw = SYSTEM_TOKENS + history_tokens(&history, counter);
        let p = project(&history, SYSTEM_TOKENS, &budget, counter, None);
        assert!(p.fits);
        let common = match &previous {
            Some(prev) => {
                let n = prev
                    .iter()
                    .zip(&p.entries)
                    .take_while(|(a, b)| a == b)
                    .count();
                if n < prev.len() {
                    breaks += 1;
                }
                SYSTEM_TOKENS + history_tokens(&p.entries[..n], counter)
            }
            None => SYSTEM_TOKENS,
        };
        reused += common;
        sent_raw += raw;
        sent_projected += p.tokens;
        if raw > budget.window as usize {
            over_window += 1;
        }
        println!(
            "{:>5}  {raw:>10}  {:>9}  {:>6}  {common:>13}",
            round + 1,
            p.tokens,
            p.elided.len()
        );
        previous = Some(p.entries);
    }
    println!(
        "window 32768, max_tokens 4096, margin {}, system {SYSTEM_TOKENS}",
        budget.margin
    );
    println!("total prompt tokens: raw {sent_raw}, projected {sent_projected}");
    println!("rounds whose raw prompt exceeds the window: {over_window} of 50");
    println!("rounds that break the previous prompt's prefix: {breaks} of 49");
    println!("prompt tokens a prefix cache could reuse: {reused} of {sent_projected}");

    let p = project(&history, SYSTEM_TOKENS, &budget, counter, None);
    let covers = compaction_span(&history, &p, None).unwrap_or(0);
    let summary_budget = Budget::new(32_768, 2048);
    let messages = build_summary_request(&history[..covers], None, None, &summary_budget, counter);
    let cost: usize = messages
        .iter()
        .map(|m: &Message| counter.count(&m.plain_text()) + MESSAGE_OVERHEAD)
        .sum();
    println!(
        "summary request over the first {covers} entries: {cost} prompt tokens + up to {} answer",
        summary_budget.max_tokens
    );
}

/// The scripted history after `rounds` rounds.
fn scripted(rounds: usize) -> Vec<hearth_conversation::HistoryEntry> {
    let mut history = vec![user(
        "Add streaming support to the HTTP client and fix the tests.",
    )];
    for round in 0..rounds {
        let calls = if round % 3 == 0 { 2 } else { 1 };
        let outputs: Vec<usize> = (0..calls)
            .map(|k| OUTPUT_LINES[(round * 2 + k) % OUTPUT_LINES.len()])
            .collect();
        history.extend(tool_round(
            round,
            "Checking the next piece.",
            Some("Plan the step."),
            &outputs,
        ));
    }
    history
}

/// The same session with automatic compaction: when it fires, what the summary request
/// costs, and what the prompt is afterwards. The summary text is a stand-in of ~1,000 tokens.
fn with_compaction(counter: &dyn TokenCounter) {
    let budget = Budget::new(32_768, 4096);
    let summary_budget = Budget::new(32_768, 2048);
    let mut summary: Option<Summary> = None;
    let (mut compactions, mut summary_prompt_tokens, mut sent) = (0, 0, 0);
    for round in 1..=50 {
        let history = scripted(round);
        let mut p = project(&history, SYSTEM_TOKENS, &budget, counter, summary.as_ref());
        if should_compact(p.unelided_tokens, budget.window, DEFAULT_COMPACT_THRESHOLD)
            && let Some(covers) = compaction_span(&history, &p, summary.as_ref())
        {
            let request = build_summary_request(
                &history[..covers],
                summary.as_ref(),
                None,
                &summary_budget,
                counter,
            );
            let cost: usize = request
                .iter()
                .map(|m: &Message| counter.count(&m.plain_text()) + MESSAGE_OVERHEAD)
                .sum();
            compactions += 1;
            summary_prompt_tokens += cost;
            summary = Some(Summary {
                covers,
                text: code(50, 9999),
            });
            p = project(&history, SYSTEM_TOKENS, &budget, counter, summary.as_ref());
            println!(
                "round {round}: compaction over {covers} entries, request {cost} tokens; \
                 prompt now {} tokens",
                p.tokens
            );
        }
        sent += p.tokens;
    }
    println!(
        "with automatic compaction: {compactions} compactions in 50 rounds, \
         {summary_prompt_tokens} summary prompt tokens, {sent} prompt tokens sent"
    );
}

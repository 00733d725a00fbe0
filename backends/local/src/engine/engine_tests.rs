use std::time::Duration;

use hearth_backend::{FinishReason, Progress};

use super::*;
use crate::error::EngineError;
use crate::fault::FaultClass;
use crate::inject::{FaultPlan, InjectedFault, Seam};
use crate::model::LoadStage;
use crate::model::tiny::{self, TinySpec};
use crate::sampler::SamplingParams;

struct Fixture {
    engine: Engine,
    faults: FaultPlan,
    _dir: tempfile::TempDir,
}

fn fixture_with(edit: impl FnOnce(&mut EngineConfig)) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = tiny::write(&TinySpec::qwen2(), dir.path(), "tiny");
    let mut config = EngineConfig::new(path);
    config.prefill_chunk = Some(3);
    edit(&mut config);
    let faults = config.faults.clone();
    let engine = Engine::spawn(config).unwrap();
    assert_eq!(engine.wait_ready(Duration::from_secs(30)), Health::Healthy);
    Fixture {
        engine,
        faults,
        _dir: dir,
    }
}

fn fixture() -> Fixture {
    fixture_with(|_| {})
}

fn request(tokens: &[u32], max: usize) -> GenerateRequest {
    let mut req = GenerateRequest::new(Prompt::Tokens(tokens.to_vec()), SamplingParams::greedy());
    req.max_tokens = Some(max);
    req
}

/// Collects every event until the stream closes and checks the one-terminal rule.
pub(crate) fn collect(engine: &Engine, req: GenerateRequest) -> Vec<EngineEvent> {
    let mut rx = engine.submit(req);
    let mut events = Vec::new();
    while let Some(ev) = rx.blocking_recv() {
        events.push(ev);
    }
    let terminals: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.is_terminal())
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        terminals,
        vec![events.len() - 1],
        "exactly one terminal, last: {events:?}"
    );
    events
}

pub(crate) fn text(events: &[EngineEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn cold_causes(events: &[EngineEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::Progress(Progress::ColdPrefill { reason }) => Some(reason.clone()),
            _ => None,
        })
        .collect()
}

fn usage(events: &[EngineEvent]) -> hearth_backend::Usage {
    events
        .iter()
        .find_map(|e| match e {
            EngineEvent::Usage(u) => Some(*u),
            _ => None,
        })
        .unwrap()
}

fn prompt(n: usize, salt: u32) -> Vec<u32> {
    (0..n as u32)
        .map(|i| (i * 31 + salt * 7 + 5) % 250)
        .collect()
}

#[test]
fn warm_continuation_equals_cold_prefill_and_reports_causes_once() {
    let fx = fixture();
    let first = prompt(20, 1);
    let a = collect(&fx.engine, request(&first, 5));
    assert_eq!(cold_causes(&a), vec!["new_session"]);
    assert!(matches!(a.last(), Some(EngineEvent::Done(_))));
    // The next round: the same conversation plus more tokens.
    let mut second = first.clone();
    second.extend(prompt(10, 2));
    let warm = collect(&fx.engine, request(&second, 8));
    assert!(cold_causes(&warm).is_empty());
    assert_eq!(usage(&warm).cached_tokens, Some(20));
    // A fresh engine reads the whole conversation cold and must answer the same.
    let cold_fx = fixture();
    let cold = collect(&cold_fx.engine, request(&second, 8));
    assert_eq!(usage(&cold).cached_tokens, Some(0));
    assert_eq!(text(&warm), text(&cold));
    assert_eq!(
        usage(&warm).completion_tokens,
        usage(&cold).completion_tokens
    );
}

#[test]
fn chunked_prefill_reports_progress_and_max_tokens_gives_length() {
    let fx = fixture();
    let events = collect(&fx.engine, request(&prompt(10, 3), 3));
    let progress: Vec<(u32, u32)> = events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::Progress(Progress::Prefill { done, total }) => Some((*done, *total)),
            _ => None,
        })
        .collect();
    assert_eq!(progress, vec![(3, 10), (6, 10), (9, 10), (10, 10)]);
    let u = usage(&events);
    assert_eq!(u.prompt_tokens, 10);
    let last = events.last().unwrap();
    if u.completion_tokens == 3 {
        assert!(matches!(last, EngineEvent::Done(FinishReason::Length)));
    } else {
        // The model may end its turn first.
        assert!(matches!(last, EngineEvent::Done(FinishReason::Stop)));
    }
}

#[test]
fn eviction_and_failures_are_reported_on_the_next_cold_prefill() {
    // Room for one cached sequence only.
    let fx = fixture_with(|c| c.max_cached_sequences = 1);
    let a = prompt(12, 4);
    let b = prompt(12, 5);
    collect(&fx.engine, request(&a, 2));
    collect(&fx.engine, request(&b, 2)); // evicts a
    let again = collect(&fx.engine, request(&a, 2));
    assert_eq!(cold_causes(&again), vec!["evicted"]);

    fx.faults.arm(Seam::DecodeStep(0), InjectedFault::Tensor, 1);
    let mut longer = a.clone();
    longer.extend(prompt(4, 6));
    let failed = collect(&fx.engine, request(&longer, 2));
    assert!(matches!(failed.last(), Some(EngineEvent::Failed { .. })));
    longer.extend(prompt(3, 7));
    let after = collect(&fx.engine, request(&longer, 2));
    assert_eq!(cold_causes(&after), vec!["failed_generation"]);
    // Reported once: the next round is warm again.
    longer.extend(prompt(3, 8));
    assert!(cold_causes(&collect(&fx.engine, request(&longer, 2))).is_empty());
}

#[test]
fn memory_budget_evicts_idle_caches() {
    // A budget smaller than one cache: nothing stays cached between requests.
    let fx = fixture_with(|c| c.cache_budget_bytes = 1);
    let a = prompt(12, 12);
    collect(&fx.engine, request(&a, 2));
    let mut next = a.clone();
    next.extend(prompt(3, 13));
    let again = collect(&fx.engine, request(&next, 2));
    assert_eq!(cold_causes(&again), vec!["evicted"]);
    assert_eq!(usage(&again).cached_tokens, Some(0));
}

#[test]
fn a_shared_prefix_is_forked_not_stolen() {
    let fx = fixture();
    let system = prompt(10, 14);
    let mut a = system.clone();
    a.extend(prompt(100, 15));
    collect(&fx.engine, request(&a, 2));
    // Another conversation sharing only the first 10 tokens reuses them from a copy...
    let mut b = system.clone();
    b.extend(prompt(20, 16));
    let eb = collect(&fx.engine, request(&b, 2));
    assert_eq!(usage(&eb).cached_tokens, Some(10));
    // ...so the first conversation's cache is still whole.
    let mut a2 = a.clone();
    a2.extend(prompt(5, 17));
    let ea = collect(&fx.engine, request(&a2, 2));
    assert_eq!(usage(&ea).cached_tokens, Some(110));
}

#[test]
fn cancel_before_and_during_generation_ends_once() {
    let fx = fixture();
    let req = request(&prompt(9, 9), 50);
    req.cancel.cancel();
    let events = collect(&fx.engine, req);
    assert!(matches!(events.as_slice(), [EngineEvent::Cancelled]));
    // Races: cancel at assorted moments from another thread.
    for delay_us in [0u64, 50, 200, 1000, 3000, 10_000] {
        let req = request(&prompt(30, delay_us as u32), 40);
        let cancel = req.cancel.clone();
        let canceller = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_micros(delay_us));
            cancel.cancel();
        });
        let events = collect(&fx.engine, req);
        canceller.join().unwrap();
        assert!(matches!(
            events.last(),
            Some(EngineEvent::Cancelled | EngineEvent::Done(_))
        ));
    }
    // Dropping the receiver mid-stream stops the work; the engine keeps serving.
    let mut rx = fx.engine.submit(request(&prompt(30, 10), 40));
    let _ = rx.blocking_recv();
    drop(rx);
    let events = collect(&fx.engine, request(&prompt(5, 11), 2));
    assert!(matches!(events.last(), Some(EngineEvent::Done(_))));
}

#[test]
fn validation_errors_touch_nothing() {
    let fx = fixture();
    let events = collect(&fx.engine, request(&[], 2));
    assert!(matches!(
        events.as_slice(),
        [EngineEvent::Failed {
            error: EngineError::InvalidRequest(_),
            ..
        }]
    ));
    let events = collect(&fx.engine, request(&prompt(600, 1), 2));
    assert!(matches!(
        events.as_slice(),
        [EngineEvent::Failed {
            error: EngineError::ContextOverflow { .. },
            ..
        }]
    ));
    let events = collect(&fx.engine, request(&[1, 9999], 2));
    assert!(matches!(
        events.last(),
        Some(EngineEvent::Failed {
            error: EngineError::TokenOutOfRange { id: 9999, .. },
            ..
        })
    ));
    assert_eq!(fx.engine.health(), Health::Healthy);
}

#[path = "fault_matrix_tests.rs"]
mod fault_matrix;

fn drain(mut rx: tokio::sync::mpsc::UnboundedReceiver<EngineEvent>) -> Vec<EngineEvent> {
    let mut events = Vec::new();
    while let Some(ev) = rx.blocking_recv() {
        events.push(ev);
    }
    events
}

fn queued(events: &[EngineEvent]) -> Vec<u32> {
    events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::Progress(Progress::Queued { ahead }) => Some(*ahead),
            _ => None,
        })
        .collect()
}

#[test]
fn a_request_waiting_behind_others_says_how_many_are_ahead() {
    let fx = fixture();
    // Hold the first request inside its prefill so the next two must wait behind it.
    fx.faults.pause(Seam::PrefillChunk(0));
    let first = fx.engine.submit(request(&prompt(10, 4), 3));
    let second = fx.engine.submit(request(&prompt(10, 5), 3));
    let third = fx.engine.submit(request(&prompt(10, 6), 3));
    fx.faults.resume();
    let (first, second, third) = (drain(first), drain(second), drain(third));
    assert!(queued(&first).is_empty(), "{first:?}");
    assert_eq!(queued(&second), vec![1]);
    assert_eq!(queued(&third), vec![2]);
    // The notice comes first, before anything the request itself produces.
    assert!(matches!(
        third.first(),
        Some(EngineEvent::Progress(Progress::Queued { ahead: 2 }))
    ));
    for events in [&first, &second, &third] {
        assert!(
            matches!(events.last(), Some(EngineEvent::Done(_))),
            "{events:?}"
        );
    }
    // With nothing in front, no notice.
    let alone = collect(&fx.engine, request(&prompt(10, 7), 3));
    assert!(queued(&alone).is_empty(), "{alone:?}");
}

/// A ChatML prompt whose system turn is the agent's (long, the same every session), then
/// `user`'s turn.
fn chatml(user: &str) -> GenerateRequest {
    let text = format!(
        "<|im_start|>system\n{}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n\
         <|im_start|>assistant\n",
        "You are a careful coding agent. ".repeat(8)
    );
    let mut req = GenerateRequest::new(Prompt::Text(text), SamplingParams::greedy());
    req.max_tokens = Some(6);
    req
}

#[test]
fn a_new_engine_reads_the_system_turn_an_earlier_one_saved_and_answers_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let path = tiny::write(&TinySpec::qwen2(), dir.path(), "tiny");
    let spawn = |prefixes: Option<std::path::PathBuf>| {
        let mut config = EngineConfig::new(&path);
        config.prefill_chunk = Some(16);
        config.prefix_dir = prefixes;
        let engine = Engine::spawn(config).unwrap();
        assert_eq!(engine.wait_ready(Duration::from_secs(30)), Health::Healthy);
        engine
    };
    let prefixes = dir.path().join("prefixes");
    let first = collect(&spawn(Some(prefixes.clone())), chatml("write fizzbuzz"));
    assert_eq!(cold_causes(&first), vec!["new_session"]);
    assert!(prefixes.exists(), "the system turn was saved");

    // A later session in a new process: its own engine, another question.
    let later = collect(&spawn(Some(prefixes)), chatml("explain this error"));
    assert!(cold_causes(&later).is_empty(), "{later:?}");
    let cached = usage(&later).cached_tokens.unwrap();
    assert!(cached > 256, "the system turn came from disk: {cached}");
    let reference = collect(&spawn(None), chatml("explain this error"));
    assert_eq!(usage(&reference).cached_tokens, Some(0));
    assert_eq!(text(&later), text(&reference));
    assert_eq!(
        usage(&later).completion_tokens,
        usage(&reference).completion_tokens
    );
}

//! The engine in a worker process. The worker is this test binary itself, started with a
//! filter that runs only [`worker_child_entry`], which serves the protocol when told to by
//! the environment (libtest's own lines on stdout are not messages and are skipped).

use std::time::{Duration, Instant};

use hearth_backend::Progress;

use super::*;
use crate::engine::tests::{collect, text};
use crate::engine::{Engine, EngineConfig, EngineEvent, GenerateRequest, Health, Prompt};
use crate::error::EngineError;
use crate::fault::FaultClass;
use crate::inject::{InjectedFault, Seam};
use crate::model::tiny::{self, TinySpec};
use crate::sampler::SamplingParams;

const CHILD_ENV: &str = "HEARTH_TEST_ENGINE_WORKER";

#[test]
fn worker_child_entry() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let exit = serve_worker(std::io::BufReader::new(std::io::stdin()), std::io::stdout());
    std::process::exit(i32::from(exit.code()));
}

fn worker_command() -> WorkerCommand {
    WorkerCommand {
        program: std::env::current_exe().unwrap(),
        args: [
            "engine::process::tests::worker_child_entry",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ]
        .map(String::from)
        .to_vec(),
        env: vec![(CHILD_ENV.into(), "1".into())],
    }
}

struct Fixture {
    engine: Engine,
    _dir: tempfile::TempDir,
}

fn engine_with(isolation: Isolation, edit: impl FnOnce(&mut EngineConfig)) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = tiny::write(&TinySpec::qwen2(), dir.path(), "tiny");
    let mut config = EngineConfig::new(path);
    config.prefill_chunk = Some(4);
    config.isolation = isolation;
    edit(&mut config);
    let engine = Engine::spawn(config).unwrap();
    assert_eq!(engine.wait_ready(Duration::from_secs(60)), Health::Healthy);
    Fixture { engine, _dir: dir }
}

fn in_worker(edit: impl FnOnce(&mut EngineConfig)) -> Fixture {
    engine_with(Isolation::Process(worker_command()), edit)
}

fn request(salt: u32, max: usize) -> GenerateRequest {
    let tokens = (0..12u32).map(|i| (i * 37 + salt * 11 + 3) % 250).collect();
    let mut req = GenerateRequest::new(Prompt::Tokens(tokens), SamplingParams::greedy());
    req.max_tokens = Some(max);
    req
}

fn wait_for(engine: &Engine, what: impl Fn(&Health) -> bool) -> Health {
    let start = Instant::now();
    loop {
        let health = engine.health();
        if what(&health) || start.elapsed() > Duration::from_secs(60) {
            return health;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_worker_process_answers_as_the_engine_thread_does() {
    let local = engine_with(Isolation::Thread, |_| {});
    let remote = in_worker(|_| {});
    let pid = remote.engine.worker_pid().unwrap();
    assert_ne!(pid, std::process::id());
    // The worker reported its canary, which a replacement will have to reproduce.
    assert!(remote.engine.canary().is_some());
    assert_eq!(remote.engine.canary(), local.engine.canary());
    assert!(remote.engine.summary().device.contains("worker process"));
    for salt in 0..3 {
        let a = collect(&local.engine, request(salt, 8));
        let b = collect(&remote.engine, request(salt, 8));
        assert_eq!(text(&a), text(&b));
        assert!(matches!(b.last(), Some(EngineEvent::Done(_))), "{b:?}");
        assert!(b.iter().any(|e| matches!(e, EngineEvent::Usage(_))));
    }
    // Errors keep their type across the boundary.
    let mut too_long = request(0, 4);
    too_long.prompt = Prompt::Tokens(vec![1; 600]);
    let events = collect(&remote.engine, too_long);
    assert!(matches!(
        events.as_slice(),
        [EngineEvent::Failed {
            error: EngineError::ContextOverflow { .. },
            ..
        }]
    ));
    assert_eq!(remote.engine.worker_pid(), Some(pid));
}

#[test]
fn a_sticky_fault_replaces_the_worker_which_then_serves_again() {
    let baseline = text(&collect(
        &engine_with(Isolation::Thread, |_| {}).engine,
        request(5, 6),
    ));
    let fx = in_worker(|c| {
        c.faults
            .arm(Seam::DecodeStep(3), InjectedFault::StickyCuda, 1)
    });
    let first = fx.engine.worker_pid().unwrap();
    let events = collect(&fx.engine, request(5, 6));
    let Some(EngineEvent::Failed { error, partial }) = events.last() else {
        panic!("{events:?}");
    };
    assert_eq!(error.class(), FaultClass::Device, "{error}");
    assert!(error.to_string().contains("CUDA_ERROR_ILLEGAL_ADDRESS"));
    assert_eq!(*partial, text(&events));
    // Refused at once, never queued behind the restart.
    let refused = collect(&fx.engine, request(6, 2));
    assert!(
        matches!(
            refused.as_slice(),
            [EngineEvent::Failed {
                error: EngineError::Poisoned { .. },
                ..
            }]
        ),
        "{refused:?}"
    );
    assert!(refused[0].is_terminal());
    // A new process loads the model and answers exactly as before the fault.
    assert_eq!(
        wait_for(&fx.engine, |h| *h == Health::Healthy),
        Health::Healthy
    );
    let second = fx.engine.worker_pid().unwrap();
    assert_ne!(first, second, "the worker process was replaced");
    let after = collect(&fx.engine, request(5, 6));
    assert!(
        matches!(after.last(), Some(EngineEvent::Done(_))),
        "{after:?}"
    );
    assert_eq!(text(&after), baseline);
}

#[test]
fn a_load_that_does_not_reproduce_the_expected_canary_fails() {
    for isolation in [Isolation::Thread, Isolation::Process(worker_command())] {
        let dir = tempfile::tempdir().unwrap();
        let mut config = EngineConfig::new(tiny::write(&TinySpec::qwen2(), dir.path(), "tiny"));
        config.isolation = isolation;
        config.expected_canary = Some(vec![1, 2, 3, 4]);
        let engine = Engine::spawn(config).unwrap();
        let health = wait_for(&engine, |h| !matches!(h, Health::Loading { .. }));
        let Health::Failed { reason } = health else {
            panic!("{health:?}");
        };
        assert!(reason.contains("canary mismatch"), "{reason}");
    }
}

#[test]
fn worker_restarts_are_capped() {
    let fx = in_worker(|c| {
        c.max_reloads = 0;
        c.faults
            .arm(Seam::PrefillChunk(0), InjectedFault::StickyCuda, 1);
    });
    let events = collect(&fx.engine, request(1, 4));
    assert!(matches!(events.last(), Some(EngineEvent::Failed { .. })));
    let health = wait_for(&fx.engine, |h| matches!(h, Health::Failed { .. }));
    let Health::Failed { reason } = health else {
        panic!("{health:?}");
    };
    assert!(reason.contains("giving up"), "{reason}");
    assert!(reason.contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{reason}");
    let refused = collect(&fx.engine, request(2, 2));
    assert!(matches!(
        refused.as_slice(),
        [EngineEvent::Failed {
            error: EngineError::Failed(_),
            ..
        }]
    ));
}

/// Waits for the request's first event, then for the engine to be inside the stall.
fn started(rx: &mut tokio::sync::mpsc::UnboundedReceiver<EngineEvent>) -> Vec<EngineEvent> {
    let first = rx.blocking_recv().unwrap();
    assert!(
        matches!(first, EngineEvent::Progress(Progress::ColdPrefill { .. })),
        "{first:?}"
    );
    std::thread::sleep(Duration::from_millis(300));
    vec![first]
}

#[test]
fn a_crashed_worker_ends_its_request_with_the_partial_text_and_is_replaced() {
    let fx = in_worker(|c| {
        c.faults.arm(Seam::DecodeStep(2), InjectedFault::Stall, 1);
    });
    let pid = fx.engine.worker_pid().unwrap();
    let mut rx = fx.engine.submit(request(3, 8));
    let mut events = started(&mut rx);
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    while let Some(ev) = rx.blocking_recv() {
        events.push(ev);
    }
    let Some(EngineEvent::Failed { error, partial }) = events.last() else {
        panic!("{events:?}");
    };
    assert!(matches!(error, EngineError::Poisoned { .. }), "{error}");
    assert!(
        error.to_string().contains("engine worker exited"),
        "{error}"
    );
    assert_eq!(*partial, text(&events));
    assert_eq!(
        wait_for(&fx.engine, |h| *h == Health::Healthy),
        Health::Healthy
    );
    assert_ne!(fx.engine.worker_pid(), Some(pid));
    let after = collect(&fx.engine, request(3, 4));
    assert!(
        matches!(after.last(), Some(EngineEvent::Done(_))),
        "{after:?}"
    );
}

#[test]
fn cancels_and_dropped_streams_cross_into_the_worker() {
    let fx = in_worker(|c| {
        c.faults.arm(Seam::DecodeStep(1), InjectedFault::Stall, 2);
    });
    let req = request(4, 200);
    let cancel = req.cancel.clone();
    let mut rx = fx.engine.submit(req);
    let mut events = started(&mut rx);
    let asked = Instant::now();
    cancel.cancel();
    while let Some(ev) = rx.blocking_recv() {
        events.push(ev);
    }
    assert!(
        matches!(events.last(), Some(EngineEvent::Cancelled)),
        "{events:?}"
    );
    // Ended by the cancel once the stall is over, not after 200 tokens.
    assert!(asked.elapsed() < crate::inject::STALL + Duration::from_secs(10));
    // A dropped stream is a cancel too: the worker stops that request (after its stall) and
    // serves the next.
    let mut rx = fx.engine.submit(request(5, 200));
    let _ = started(&mut rx);
    drop(rx);
    let next = collect(&fx.engine, request(6, 2));
    assert!(
        matches!(next.last(), Some(EngineEvent::Done(_))),
        "{next:?}"
    );
}

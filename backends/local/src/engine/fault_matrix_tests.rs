//! The fault matrix: every injected fault class at every seam.

use super::*;

const FAULTS: [InjectedFault; 5] = [
    InjectedFault::Tensor,
    InjectedFault::OutOfMemory,
    InjectedFault::StickyCuda,
    InjectedFault::UnknownCuda,
    InjectedFault::Panic,
];

fn expected_class(fault: InjectedFault) -> FaultClass {
    match fault {
        InjectedFault::Tensor | InjectedFault::Panic => FaultClass::Request,
        InjectedFault::OutOfMemory => FaultClass::Resource,
        InjectedFault::StickyCuda | InjectedFault::UnknownCuda => FaultClass::Device,
        InjectedFault::Stall => unreachable!("a stall is not a fault"),
    }
}

#[test]
fn every_fault_at_every_seam_is_classified_and_recovered() {
    let fx = fixture_with(|c| c.max_reloads = 100);
    let base = prompt(10, 20);
    let baseline = text(&collect(&fx.engine, request(&base, 6)));
    let seams = [
        Seam::PrefillChunk(0),
        Seam::PrefillChunk(2),
        Seam::DecodeStep(0),
        Seam::DecodeStep(3),
    ];
    for (i, fault) in FAULTS.into_iter().enumerate() {
        for (j, seam) in seams.into_iter().enumerate() {
            // A conversation of its own, cached first, then continued under the fault.
            let mut conv = prompt(8, 100 + (i * 10 + j) as u32);
            collect(&fx.engine, request(&conv, 2));
            conv.extend(prompt(9, 300 + (i * 10 + j) as u32));
            fx.faults.arm(seam, fault, 1);
            let events = collect(&fx.engine, request(&conv, 6));
            let Some(EngineEvent::Failed { error, .. }) = events.last() else {
                panic!("{fault:?} at {seam:?}: {events:?}");
            };
            assert_eq!(
                error.class(),
                expected_class(fault),
                "{fault:?} at {seam:?}"
            );
            if fault == InjectedFault::Panic {
                assert!(matches!(error, EngineError::Panic(_)));
            }
            if expected_class(fault) == FaultClass::Device {
                // Reloaded (the canary passed) and serving again.
                wait_healthy(&fx.engine);
            } else {
                assert_eq!(
                    fx.engine.health(),
                    Health::Healthy,
                    "{fault:?} never poisons"
                );
            }
            // The failed sequence's cache was reset: the next round is cold, with the cause.
            conv.extend(prompt(2, 500));
            let next = collect(&fx.engine, request(&conv, 2));
            let want = if expected_class(fault) == FaultClass::Device {
                "reload"
            } else {
                "failed_generation"
            };
            assert_eq!(cold_causes(&next), vec![want], "{fault:?} at {seam:?}");
            assert!(matches!(next.last(), Some(EngineEvent::Done(_))));
        }
    }
    // After all of it the model answers exactly as before.
    assert_eq!(text(&collect(&fx.engine, request(&base, 6))), baseline);
}

fn wait_healthy(engine: &Engine) {
    for _ in 0..2000 {
        if engine.health() == Health::Healthy {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("never healthy: {:?}", engine.health());
}

#[test]
fn device_fault_carries_partial_output_and_poisoned_model_refuses_at_once() {
    let fx = fixture_with(|c| c.max_reloads = 2);
    // Every reload's canary fails: the model ends up failed, refusing at once.
    fx.faults.arm(Seam::Canary, InjectedFault::Tensor, 2);
    fx.faults
        .arm(Seam::DecodeStep(4), InjectedFault::StickyCuda, 1);
    let events = collect(&fx.engine, request(&prompt(6, 40), 20));
    let Some(EngineEvent::Failed { error, partial }) = events.last() else {
        panic!("{events:?}");
    };
    assert_eq!(error.class(), FaultClass::Device);
    assert_eq!(*partial, text(&events));
    // While the reloads run, new requests are refused at once as poisoned; once they are
    // spent the model stays failed and says so.
    let refused = collect(&fx.engine, request(&prompt(6, 41), 2));
    assert!(matches!(
        refused.as_slice(),
        [EngineEvent::Failed {
            error: EngineError::Poisoned { .. } | EngineError::Failed(_),
            ..
        }]
    ));
    for _ in 0..2000 {
        if matches!(fx.engine.health(), Health::Failed { .. }) {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let refused = collect(&fx.engine, request(&prompt(6, 41), 2));
    match refused.as_slice() {
        [
            EngineEvent::Failed {
                error: EngineError::Failed(reason),
                ..
            },
        ] => {
            assert!(reason.contains("reload limit reached"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // A poisoned (reloading) model refuses at once too.
    fx.engine.health.set(Health::Poisoned {
        cause: "synthetic".into(),
    });
    let refused = collect(&fx.engine, request(&prompt(6, 42), 2));
    assert!(matches!(
        refused.as_slice(),
        [EngineEvent::Failed {
            error: EngineError::Poisoned { .. },
            ..
        }]
    ));
    let backend_err = match refused.into_iter().next() {
        Some(EngineEvent::Failed { error, .. }) => error.into_backend("m"),
        _ => unreachable!(),
    };
    assert_eq!(
        backend_err.to_string(),
        "model poisoned: synthetic; reloading"
    );
}

#[test]
fn failed_load_frees_everything_and_a_retry_succeeds() {
    let stages = [
        LoadStage::Header,
        LoadStage::Embedding,
        LoadStage::Block { n: 1, total: 2 },
        LoadStage::Head,
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = tiny::write(&TinySpec::qwen3(), dir.path(), "tiny3");
    for stage in stages {
        for fault in [InjectedFault::Tensor, InjectedFault::OutOfMemory] {
            let config = EngineConfig::new(&path);
            config.faults.arm(Seam::Load(stage), fault, 1);
            let engine = Engine::spawn(config.clone()).unwrap();
            let health = engine.wait_ready(Duration::from_secs(30));
            assert!(
                matches!(health, Health::Failed { .. }),
                "{stage:?}: {health:?}"
            );
            let refused = collect(&engine, request(&[1, 2], 1));
            assert!(matches!(refused.last(), Some(EngineEvent::Failed { .. })));
            // The same plan, now spent: the retry loads cleanly.
            let retry = Engine::spawn(config).unwrap();
            assert_eq!(retry.wait_ready(Duration::from_secs(30)), Health::Healthy);
            let ok = collect(&retry, request(&[1, 2, 3], 2));
            assert!(matches!(ok.last(), Some(EngineEvent::Done(_))));
        }
    }
}

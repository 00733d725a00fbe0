//! The worker's side: [`serve_worker`] loads the model named by the first line on its input,
//! serves `generate` and `cancel` lines, and writes events and health changes as lines on its
//! output. It returns when its input closes (the supervisor is gone) or when a sticky device
//! fault lost the device context, once every in-flight request has its terminal event out.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use super::Isolation;
use super::wire::{FromWorker, ToWorker, WireEvent};
use crate::engine::{Engine, Health};
use crate::inject::FaultPlan;

/// How often the worker looks at its model's health (a reload's progress, a poisoning).
const HEALTH_POLL: Duration = Duration::from_millis(10);

/// Why [`serve_worker`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerExit {
    /// The supervisor closed the input: a normal shutdown.
    Closed,
    /// A sticky device fault lost the device context: the process must end and be replaced.
    Restart,
    /// The first line was not a start message, or the engine could not start.
    Failed,
}

impl WorkerExit {
    /// The process exit code for this ending.
    pub fn code(self) -> u8 {
        match self {
            Self::Closed => 0,
            Self::Restart => 3,
            Self::Failed => 4,
        }
    }
}

type Output = Arc<Mutex<Box<dyn Write + Send>>>;

/// Writes one message as one line. A failed write means the supervisor is gone; the input
/// closes next and ends the loop, so the error is only logged.
fn send(out: &Output, message: &FromWorker) {
    let Ok(mut line) = serde_json::to_vec(message) else {
        return error!("an engine message did not serialize");
    };
    line.push(b'\n');
    let mut out = match out.lock() {
        Ok(out) => out,
        Err(poisoned) => poisoned.into_inner(),
    };
    if let Err(err) = out.write_all(&line).and_then(|()| out.flush()) {
        warn!(%err, "writing to the supervisor failed");
    }
}

/// Runs an engine worker over `input` and `output` (a process's stdin and stdout).
pub fn serve_worker(
    mut input: impl BufRead + Send + 'static,
    output: impl Write + Send + 'static,
) -> WorkerExit {
    let out: Output = Arc::new(Mutex::new(Box::new(output)));
    // Whatever was printed before the worker started (a banner, a test harness's line with no
    // newline) ends here instead of merging with the first message.
    if let Ok(mut out) = out.lock() {
        let _ = out.write_all(b"\n").and_then(|()| out.flush());
    }
    let failed = |reason: String| {
        error!(%reason, "engine worker cannot start");
        send(
            &out,
            &FromWorker::Health {
                health: Health::Failed { reason },
            },
        );
        WorkerExit::Failed
    };
    let mut first = String::new();
    let start = match input.read_line(&mut first) {
        Ok(_) => serde_json::from_str::<ToWorker>(&first),
        Err(err) => return failed(format!("reading the start line: {err}")),
    };
    let (mut config, faults) = match start {
        Ok(ToWorker::Start { config, faults }) => (*config, faults),
        Ok(other) => return failed(format!("expected a start line, got {other:?}")),
        Err(err) => return failed(format!("malformed start line: {err}")),
    };
    config.isolation = Isolation::Worker;
    config.faults = FaultPlan::with_armed(faults);
    let engine = match Engine::spawn(config) {
        Ok(engine) => engine,
        Err(err) => return failed(err.to_string()),
    };
    let commands = read_commands(input);
    let in_flight = Arc::new(AtomicUsize::new(0));
    let cancels: Arc<Mutex<HashMap<u64, CancellationToken>>> = Arc::default();
    let mut last_health = None;
    let mut canary_sent = false;
    loop {
        match commands.recv_timeout(HEALTH_POLL) {
            Ok(ToWorker::Generate { id, request }) => {
                let cancel = CancellationToken::new();
                lock(&cancels).insert(id, cancel.clone());
                in_flight.fetch_add(1, Ordering::SeqCst);
                let events = engine.submit(request.into_request(cancel));
                forward(id, events, out.clone(), cancels.clone(), in_flight.clone());
            }
            Ok(ToWorker::Cancel { id }) => {
                if let Some(token) = lock(&cancels).get(&id) {
                    token.cancel();
                }
            }
            Ok(ToWorker::Start { .. }) => warn!("a second start line is ignored"),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                info!("the supervisor closed the engine worker's input");
                return WorkerExit::Closed;
            }
        }
        let health = engine.health();
        if last_health.as_ref() != Some(&health) {
            // The canary goes first, so the supervisor has it before it reports the model
            // healthy.
            if health == Health::Healthy
                && !canary_sent
                && let Some(tokens) = engine.canary()
            {
                send(&out, &FromWorker::Canary { tokens });
                canary_sent = true;
            }
            send(
                &out,
                &FromWorker::Health {
                    health: health.clone(),
                },
            );
            last_health = Some(health.clone());
        }
        if matches!(health, Health::Restarting { .. }) && in_flight.load(Ordering::SeqCst) == 0 {
            error!("the device context is lost; the engine worker exits to be restarted");
            return WorkerExit::Restart;
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Parses input lines on a thread of their own; a malformed line is logged and skipped, and
/// the channel closes with the input.
fn read_commands(input: impl BufRead + Send + 'static) -> mpsc::Receiver<ToWorker> {
    let (tx, rx) = mpsc::channel();
    let spawned = thread::Builder::new()
        .name("hearth-worker-input".into())
        .spawn(move || {
            for line in input.lines() {
                let Ok(line) = line else { break };
                match serde_json::from_str::<ToWorker>(&line) {
                    Ok(command) => {
                        if tx.send(command).is_err() {
                            break;
                        }
                    }
                    Err(err) => warn!(%err, "malformed line from the supervisor, skipped"),
                }
            }
        });
    if let Err(err) = spawned {
        // Dropping the sender closes the channel: the worker ends as if its input had.
        error!(%err, "cannot start the input thread");
    }
    rx
}

/// Streams one request's events to the supervisor until its terminal event.
fn forward(
    id: u64,
    mut events: tokio::sync::mpsc::UnboundedReceiver<crate::engine::EngineEvent>,
    out: Output,
    cancels: Arc<Mutex<HashMap<u64, CancellationToken>>>,
    in_flight: Arc<AtomicUsize>,
) {
    let counted = in_flight.clone();
    let run = move || {
        while let Some(event) = events.blocking_recv() {
            let terminal = event.is_terminal();
            send(
                &out,
                &FromWorker::Event {
                    id,
                    event: WireEvent::from(event),
                },
            );
            if terminal {
                break;
            }
        }
        lock(&cancels).remove(&id);
        in_flight.fetch_sub(1, Ordering::SeqCst);
    };
    if let Err(err) = thread::Builder::new()
        .name("hearth-worker-events".into())
        .spawn(run)
    {
        // The request's receiver is gone with the closure, which the engine takes as a cancel;
        // the supervisor learns of it when the worker restarts or shuts down.
        error!(%err, "cannot start an event thread");
        counted.fetch_sub(1, Ordering::SeqCst);
    }
}

//! The parent's side of an engine worker: starts the worker process, forwards requests and
//! cancels to it, streams its events into each request's [`Sink`], mirrors its health, and
//! replaces it when it ends.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tracing::{debug, error, info, warn};

use super::WorkerCommand;
use super::wire::{FromWorker, ToWorker, WireEvent, WireRequest};
use crate::engine::health::{CanaryCell, Health, HealthCell};
use crate::engine::sink::{Sink, Terminal};
use crate::engine::{EngineConfig, EngineEvent, GenerateRequest};
use crate::error::EngineError;
use crate::fault::FaultClass;

/// Restarts count against `max_reloads` within this window, as in-process reloads do.
const RESTART_WINDOW: Duration = Duration::from_secs(600);
/// How long a worker whose output closed gets to exit before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// The running worker process and its bookkeeping. Dropping it ends the worker.
pub(crate) struct Supervisor {
    shared: Arc<Shared>,
}

struct Shared {
    command: WorkerCommand,
    config: EngineConfig,
    health: HealthCell,
    /// The first worker's canary tokens, which every replacement must reproduce.
    canary: CanaryCell,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    worker: Option<WorkerProcess>,
    /// Counts workers started; a reader thread only acts for its own worker.
    generation: u64,
    requests: HashMap<u64, InFlight>,
    next_id: u64,
    restarts: Vec<Instant>,
    /// A replacement worker is loading: the model stays poisoned (new requests refused) until
    /// it reports healthy, as an in-process reload does.
    restarting: bool,
    closing: bool,
}

struct WorkerProcess {
    child: Child,
    stdin: ChildStdin,
}

struct InFlight {
    sink: Sink,
    /// Text streamed so far: what the request ends with if the worker dies.
    partial: String,
    /// Cancelled when the request ends, which stops its cancel watcher.
    done: CancellationToken,
    cancel_sent: bool,
}

impl Supervisor {
    /// Starts the first worker, which loads the model and reports its health as it goes.
    pub fn start(
        config: EngineConfig,
        command: WorkerCommand,
        health: HealthCell,
        canary: CanaryCell,
    ) -> Result<Self, EngineError> {
        let shared = Arc::new(Shared {
            command,
            config,
            health,
            canary,
            state: Mutex::new(State::default()),
        });
        shared.spawn_worker(&mut shared.lock())?;
        Ok(Self { shared })
    }

    /// Hands `request` to the worker; its events arrive on `sink`.
    pub fn submit(&self, request: GenerateRequest, sink: Sink) {
        let mut state = self.shared.lock();
        if state.worker.is_none() || state.closing {
            let error =
                self.shared.health.refusal().unwrap_or_else(|| {
                    EngineError::EngineGone("no engine worker is running".into())
                });
            return sink.finish(Terminal::Failed {
                error,
                partial: String::new(),
            });
        }
        let id = state.next_id;
        state.next_id += 1;
        let done = CancellationToken::new();
        state.requests.insert(
            id,
            InFlight {
                sink,
                partial: String::new(),
                done: done.clone(),
                cancel_sent: false,
            },
        );
        let request_line = ToWorker::Generate {
            id,
            request: WireRequest::from_request(&request),
        };
        state.write(&request_line);
        drop(state);
        self.shared.clone().watch_cancel(id, request.cancel, done);
    }

    /// The worker's process id, while one runs.
    pub fn pid(&self) -> Option<u32> {
        self.shared.lock().worker.as_ref().map(|w| w.child.id())
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.closing = true;
        if let Some(mut worker) = state.worker.take() {
            // Its reader thread sees the output close and ends the requests still in flight.
            let _ = worker.child.kill();
            let _ = worker.child.wait();
        }
    }
}

impl State {
    /// A failed write means the worker is dying; its reader thread ends what was in flight.
    fn write(&mut self, message: &ToWorker) {
        if let Some(worker) = self.worker.as_mut()
            && let Err(err) = write_line(&mut worker.stdin, message)
        {
            warn!(%err, "writing to the engine worker failed");
        }
    }
}

fn write_line(stdin: &mut ChildStdin, message: &ToWorker) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(message).map_err(std::io::Error::other)?;
    line.push(b'\n');
    stdin.write_all(&line)?;
    stdin.flush()
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn spawn_worker(self: &Arc<Self>, state: &mut State) -> Result<(), EngineError> {
        let program = &self.command.program;
        let gone = |what: &str, err: std::io::Error| {
            EngineError::EngineGone(format!(
                "{what} the engine worker {}: {err}",
                program.display()
            ))
        };
        let mut child = Command::new(program)
            .args(&self.command.args)
            .envs(self.command.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| gone("cannot start", e))?;
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            return Err(EngineError::EngineGone(
                "the engine worker has no pipes".into(),
            ));
        };
        state.generation += 1;
        // Faults armed before the engine started go to the first worker only, so a test's
        // fault fires once, not again in every replacement.
        let faults = if state.generation == 1 {
            self.config.faults.armed()
        } else {
            Vec::new()
        };
        let mut config = self.config.clone();
        config.expected_canary = self.canary.get().or(config.expected_canary);
        let start = ToWorker::Start {
            config: Box::new(config),
            faults,
        };
        if let Err(err) = write_line(&mut stdin, &start) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(gone("cannot talk to", err));
        }
        let (shared, generation) = (self.clone(), state.generation);
        thread::Builder::new()
            .name("hearth-engine-supervisor".into())
            .spawn(move || shared.read(stdout, generation))
            .map_err(|e| gone("cannot watch", e))?;
        info!(pid = child.id(), generation, "engine worker started");
        state.worker = Some(WorkerProcess { child, stdin });
        Ok(())
    }

    /// The reader thread of one worker: messages until its output closes, then the exit.
    fn read(self: Arc<Self>, stdout: ChildStdout, generation: u64) {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<FromWorker>(&line) {
                Ok(FromWorker::Health { health }) => self.mirror(health),
                Ok(FromWorker::Canary { tokens }) => self.canary.set(tokens),
                Ok(FromWorker::Event { id, event }) => self.deliver(id, event),
                // A library in the worker may print to stdout; that is not the protocol.
                Err(_) => debug!(%line, "engine worker output that is not a message"),
            }
        }
        self.worker_exited(generation);
    }

    fn mirror(&self, health: Health) {
        let mut state = self.lock();
        if state.restarting {
            match health {
                Health::Loading { .. } => return,
                Health::Healthy | Health::Failed { .. } => state.restarting = false,
                Health::Poisoned { .. } | Health::Restarting { .. } => {}
            }
            if health == Health::Healthy {
                info!("the replacement engine worker is serving");
            }
        }
        self.health.set(health);
    }

    fn deliver(&self, id: u64, event: WireEvent) {
        let mut state = self.lock();
        let event = EngineEvent::from(event);
        if event.is_terminal() {
            if let EngineEvent::Failed { error, .. } = &event
                && error.class() == FaultClass::Device
                && self.health.refusal().is_none()
            {
                // The worker refuses new work before it answers, but its health line may
                // come after this event: refuse here too before the caller hears of it.
                self.health.set(Health::Poisoned {
                    cause: error.to_string(),
                });
            }
            if let Some(entry) = state.requests.remove(&id) {
                entry.done.cancel();
                entry.sink.finish(terminal(event));
            }
            return;
        }
        let Some(entry) = state.requests.get_mut(&id) else {
            return;
        };
        if let EngineEvent::Text(text) = &event {
            entry.partial.push_str(text);
        }
        entry.sink.send(event);
        // The caller dropped its stream: the worker stops as it would for a cancel.
        if entry.sink.is_closed() && !entry.cancel_sent {
            entry.cancel_sent = true;
            state.write(&ToWorker::Cancel { id });
        }
    }

    /// Forwards the request's cancel to the worker, until the request ends.
    fn watch_cancel(self: Arc<Self>, id: u64, cancel: CancellationToken, done: CancellationToken) {
        let watch = move || {
            let cancelled = futures::executor::block_on(async {
                tokio::select! {
                    () = cancel.cancelled() => true,
                    () = done.cancelled() => false,
                }
            });
            if cancelled {
                let mut state = self.lock();
                if let Some(entry) = state.requests.get_mut(&id)
                    && !entry.cancel_sent
                {
                    entry.cancel_sent = true;
                    state.write(&ToWorker::Cancel { id });
                }
            }
        };
        if let Err(err) = thread::Builder::new()
            .name("hearth-engine-cancel".into())
            .spawn(watch)
        {
            warn!(%err, "cannot watch a request's cancel; it runs to its end");
        }
    }

    /// The worker's output closed: end its requests with their partial text, then start a
    /// replacement unless the engine is shutting down, the worker had given up on the model
    /// (a new process would fail the same way), or restarts are exhausted.
    fn worker_exited(self: &Arc<Self>, generation: u64) {
        let mut state = self.lock();
        if state.generation != generation {
            return;
        }
        let status = state
            .worker
            .take()
            .map_or_else(|| "stopped".to_string(), reap);
        let exited = format!("the engine worker exited ({status})");
        let lost: Vec<_> = state.requests.drain().map(|(_, entry)| entry).collect();
        self.after_exit(&mut state, exited.clone());
        // Only once the health says what happens next do the callers hear of the failure: one
        // that asks again at once is refused while the replacement loads, never served by a
        // health that has not yet heard of the crash.
        for entry in lost {
            entry.done.cancel();
            entry.sink.finish(Terminal::Failed {
                error: EngineError::Poisoned {
                    cause: exited.clone(),
                },
                partial: entry.partial,
            });
        }
    }

    /// The health after the worker exited, and its replacement when one is started.
    fn after_exit(self: &Arc<Self>, state: &mut State, exited: String) {
        if state.closing {
            return;
        }
        let cause = match self.health.get() {
            Health::Failed { reason } => {
                error!(%reason, %exited, "the engine worker had failed; not restarting it");
                state.restarting = false;
                return;
            }
            Health::Restarting { cause } => cause,
            _ => exited,
        };
        let now = Instant::now();
        state
            .restarts
            .retain(|t| now.duration_since(*t) < RESTART_WINDOW);
        if state.restarts.len() >= self.config.max_reloads {
            state.restarting = false;
            return self.health.set(Health::Failed {
                reason: format!(
                    "{cause}; the engine worker was restarted {} times in {} s, giving up",
                    state.restarts.len(),
                    RESTART_WINDOW.as_secs()
                ),
            });
        }
        state.restarts.push(now);
        error!(%cause, "engine worker lost; starting a new one");
        state.restarting = true;
        self.health.set(Health::Poisoned {
            cause: cause.clone(),
        });
        if let Err(err) = self.spawn_worker(state) {
            state.restarting = false;
            self.health.set(Health::Failed {
                reason: format!("{cause}; {err}"),
            });
        }
    }
}

/// Waits for a worker whose output closed, killing it if it lingers; returns how it ended.
fn reap(mut worker: WorkerProcess) -> String {
    drop(worker.stdin);
    let deadline = Instant::now() + EXIT_GRACE;
    loop {
        match worker.child.try_wait() {
            Ok(Some(status)) => return status.to_string(),
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let _ = worker.child.kill();
                return match worker.child.wait() {
                    Ok(status) => format!("{status}, killed after its output closed"),
                    Err(err) => format!("killed, then: {err}"),
                };
            }
            Err(err) => return format!("unknown status: {err}"),
        }
    }
}

fn terminal(event: EngineEvent) -> Terminal {
    match event {
        EngineEvent::Done(reason) => Terminal::Done(reason),
        EngineEvent::Failed { error, partial } => Terminal::Failed { error, partial },
        EngineEvent::Cancelled => Terminal::Cancelled,
        other => Terminal::Failed {
            error: EngineError::EngineGone(format!("not a terminal event: {other:?}")),
            partial: String::new(),
        },
    }
}

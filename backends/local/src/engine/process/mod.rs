//! The engine in a supervised child process.
//!
//! A sticky CUDA fault (an illegal address, a launch failure; docs/inference.md §4.2) leaves
//! the process's CUDA context unusable, and no reload inside the same process brings it back.
//! So on a GPU the model runs in a worker process (`hearth engine-worker`): the parent keeps
//! the [`crate::Engine`] handle, mirrors the worker's health, and streams each request's events
//! over JSON lines. When the worker dies — a sticky fault ends it on purpose, a driver crash
//! ends it by accident — in-flight requests end with their partial output, new ones are refused
//! as poisoned, and a new worker loads the model, at most `max_reloads` times in ten minutes.
//!
//! * [`wire`]: the JSON-lines messages.
//! * [`child`]: the worker's side ([`serve_worker`]).
//! * [`supervisor`]: the parent's side.

mod child;
mod supervisor;
mod wire;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use child::{WorkerExit, serve_worker};
pub(crate) use supervisor::Supervisor;

use crate::device::DeviceChoice;

/// Where the engine runs its model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub enum Isolation {
    /// On a thread of this process. After a sticky CUDA fault the model stays failed until
    /// hearth restarts.
    #[default]
    Thread,
    /// In a child process started by this command and supervised: a sticky device fault or a
    /// crash ends only the child, and a new child loads the model again.
    Process(WorkerCommand),
    /// This process is an engine worker: a sticky device fault ends it, for its supervisor to
    /// start a fresh one. Set by [`serve_worker`], not by users.
    Worker,
}

impl Isolation {
    /// A worker process for a device that can lose its context (CUDA); a thread otherwise,
    /// where a process boundary buys nothing and costs a copy of every event.
    pub fn for_device(choice: DeviceChoice, worker: WorkerCommand) -> Self {
        let gpu = match choice {
            DeviceChoice::Cuda(_) => true,
            DeviceChoice::Auto => crate::device::cuda_is_available(),
            DeviceChoice::Cpu => false,
        };
        if gpu {
            Self::Process(worker)
        } else {
            Self::Thread
        }
    }
}

/// How to start an engine worker: a program that calls [`serve_worker`] on its stdin and
/// stdout (hearth's hidden `engine-worker` subcommand).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Extra environment for the worker.
    pub env: Vec<(String, String)>,
}

impl WorkerCommand {
    /// The running executable with `args`; `None` when the OS cannot say where it is.
    pub fn this_program<I, S>(args: I) -> Option<Self>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let program = std::env::current_exe().ok()?;
        Some(Self {
            program,
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests;

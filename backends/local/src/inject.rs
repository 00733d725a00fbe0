//! Fault injection for tests: faults armed at named seams (load stages, prefill chunks, decode
//! steps, the canary). Compiled in only for this crate's tests and behind the
//! `fault-injection` feature; in every other build [`FaultPlan`] is empty and `check` is a
//! no-op the optimizer removes.

use crate::error::EngineError;
use crate::model::LoadStage;

/// Where a fault can be injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Seam {
    Load(LoadStage),
    /// After prefill chunk `k` (0-based) ran.
    PrefillChunk(usize),
    /// After decode step `k` (0-based) sampled its token.
    DecodeStep(usize),
    /// Inside the canary check after a reload.
    Canary,
}

/// What an injected fault looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum InjectedFault {
    /// An ordinary tensor error (e.g. a shape mismatch).
    Tensor,
    /// `CUDA_ERROR_OUT_OF_MEMORY`.
    OutOfMemory,
    /// `CUDA_ERROR_ILLEGAL_ADDRESS`, a sticky code.
    StickyCuda,
    /// A CUDA code the classifier does not know.
    UnknownCuda,
    /// A panic in the engine's code.
    Panic,
    /// Not an error: the engine stalls at the seam for [`STALL`], like a slow device, so a
    /// test can act while a request is surely in flight (across a process boundary too).
    Stall,
}

/// How long an [`InjectedFault::Stall`] holds the engine.
pub const STALL: std::time::Duration = std::time::Duration::from_secs(3);

impl InjectedFault {
    /// The synthetic error (panics for [`InjectedFault::Panic`]).
    pub fn raise(self) -> EngineError {
        let cuda = |code: &str| {
            candle_core::Error::Cuda(Box::new(std::io::Error::other(format!(
                "DriverError({code}, \"injected\")"
            ))))
        };
        let err = match self {
            Self::Tensor => candle_core::Error::Msg("injected shape mismatch".into()),
            Self::OutOfMemory => cuda("CUDA_ERROR_OUT_OF_MEMORY"),
            Self::StickyCuda => cuda("CUDA_ERROR_ILLEGAL_ADDRESS"),
            Self::UnknownCuda => cuda("CUDA_ERROR_NEVER_SEEN_BEFORE"),
            Self::Panic => panic!("injected panic"),
            Self::Stall => candle_core::Error::Msg("a stall is not an error".into()),
        };
        EngineError::Tensor(err)
    }
}

/// One armed fault: where, what, and how many more times it fires. What crosses into an
/// engine worker process (see `engine::process`).
pub type ArmedFault = (Seam, InjectedFault, usize);

#[cfg(any(test, feature = "fault-injection"))]
mod plan {
    use std::sync::{Arc, Condvar, Mutex};

    use super::{ArmedFault, InjectedFault, Seam};
    use crate::error::EngineError;

    /// Armed faults, shared with the engine thread so a test can arm them at any time.
    #[derive(Debug, Clone, Default)]
    pub struct FaultPlan {
        armed: Arc<Mutex<Vec<(Seam, InjectedFault, usize)>>>,
        /// Seams the engine thread waits at until [`FaultPlan::resume`] (to hold the engine
        /// busy at a known point).
        paused: Arc<(Mutex<Vec<Seam>>, Condvar)>,
    }

    impl FaultPlan {
        /// Makes the engine thread wait when it reaches `seam`, until [`FaultPlan::resume`].
        pub fn pause(&self, seam: Seam) {
            if let Ok(mut paused) = self.paused.0.lock() {
                paused.push(seam);
            }
        }

        /// Lets every paused seam go.
        pub fn resume(&self) {
            if let Ok(mut paused) = self.paused.0.lock() {
                paused.clear();
            }
            self.paused.1.notify_all();
        }

        fn wait_if_paused(&self, seam: Seam) {
            let (lock, cvar) = &*self.paused;
            let Ok(mut paused) = lock.lock() else {
                return;
            };
            while paused.contains(&seam) {
                paused = match cvar.wait(paused) {
                    Ok(p) => p,
                    Err(_) => return,
                };
            }
        }

        /// The faults still armed, to re-arm in a worker process.
        pub fn armed(&self) -> Vec<ArmedFault> {
            self.armed.lock().map(|a| a.clone()).unwrap_or_default()
        }

        /// A plan with `armed` faults and nothing paused.
        pub fn with_armed(armed: Vec<ArmedFault>) -> Self {
            let plan = Self::default();
            for (seam, fault, times) in armed {
                plan.arm(seam, fault, times);
            }
            plan
        }

        /// Fires `fault` the next `times` times `seam` is reached.
        pub fn arm(&self, seam: Seam, fault: InjectedFault, times: usize) {
            if let Ok(mut armed) = self.armed.lock() {
                armed.push((seam, fault, times));
            }
        }

        pub fn check(&self, seam: Seam) -> Result<(), EngineError> {
            self.wait_if_paused(seam);
            let fault = {
                let Ok(mut armed) = self.armed.lock() else {
                    return Ok(());
                };
                let hit = armed.iter_mut().find(|(s, _, n)| *s == seam && *n > 0);
                match hit {
                    Some((_, fault, n)) => {
                        *n -= 1;
                        Some(*fault)
                    }
                    None => None,
                }
            };
            match fault {
                Some(InjectedFault::Stall) => {
                    std::thread::sleep(super::STALL);
                    Ok(())
                }
                Some(fault) => Err(fault.raise()),
                None => Ok(()),
            }
        }
    }
}

#[cfg(not(any(test, feature = "fault-injection")))]
mod plan {
    use super::{ArmedFault, Seam};
    use crate::error::EngineError;

    /// No faults in production builds.
    #[derive(Debug, Clone, Default)]
    pub struct FaultPlan {
        _private: (),
    }

    impl FaultPlan {
        pub fn armed(&self) -> Vec<ArmedFault> {
            Vec::new()
        }

        /// Production builds arm nothing: a worker process never injects faults.
        pub fn with_armed(_armed: Vec<ArmedFault>) -> Self {
            Self::default()
        }

        #[inline(always)]
        pub fn check(&self, _seam: Seam) -> Result<(), EngineError> {
            Ok(())
        }
    }
}

pub use plan::FaultPlan;

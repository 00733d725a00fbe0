//! The engine: a dedicated thread that owns the model and serves requests one at a time,
//! with prefix reuse, chunked prefill, sampling, and fault handling.

mod generate;
mod handle;
mod health;
mod pool;
mod prefix_file;
mod prefix_store;
pub mod process;
mod sink;
mod types;
mod worker;

pub use handle::{Engine, ModelSummary};
pub use health::Health;
pub use pool::ColdCause;
pub use process::{Isolation, WorkerCommand, WorkerExit, serve_worker};
pub use types::{EngineConfig, EngineEvent, GenerateRequest, Prompt};

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;

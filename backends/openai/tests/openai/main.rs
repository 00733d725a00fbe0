//! hearth-openai against the real fake server (hearth-testkit) on loopback.

// Helpers outside #[test] fns are test code too: a failed step should panic the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cancel;
mod common;
mod describe;
mod errors;
mod events;
mod limits;
mod ollama;
mod secrets;
mod shape;
mod split;

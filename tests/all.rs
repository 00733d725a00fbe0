//! hearth's integration tests: one test binary, suites in `suite/`, fakes in `common/`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod common;
mod suite;

//! `hearth bench`'s figures from the test profile (dependencies and the engine at opt-level 2),
//! for when a release build is not at hand. Not run by CI:
//! `HEARTH_BENCH_MODEL=path.gguf cargo test -p hearth-local --test bench_figures -- --ignored --nocapture`

// A test binary: panics are the failures.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_local::bench::{BenchConfig, run_bench};

#[test]
#[ignore = "prints figures; needs HEARTH_BENCH_MODEL"]
fn bench_figures() {
    let Ok(path) = std::env::var("HEARTH_BENCH_MODEL") else {
        eprintln!("skipped: set HEARTH_BENCH_MODEL to a GGUF");
        return;
    };
    println!("{}", run_bench(&BenchConfig::new(path)).unwrap());
}

//! Tests of the search tools: grep, glob and list_dir.

use serde_json::json;

use super::*;
use crate::tools::glob::Glob;
use crate::tools::list_dir::ListDir;
use crate::tools::test_support::Fixture;

/// A small project: sources, an ignored build dir, a hidden dir, a binary file.
fn project() -> Fixture {
    let fx = Fixture::new();
    fx.write(".gitignore", "target/\n*.log\n");
    fx.write("src/main.rs", "fn main() {\n    helper();\n}\n");
    fx.write("src/lib.rs", "pub fn helper() {}\n// TODO: more\n");
    fx.write("src/deep/mod.rs", "fn Helper() {}\n");
    fx.write("README.md", "helper docs\n");
    fx.write("target/debug/out.rs", "fn helper() {}\n");
    fx.write("run.log", "helper log\n");
    fx.write(".hidden/x.rs", "fn helper() {}\n");
    fx.write("blob.bin", b"helper\0\x01\x02");
    fx
}

#[tokio::test]
async fn grep_respects_gitignore_and_skips_binary_and_hidden() {
    let fx = project();
    let (prepared, out) = fx.call(&Grep, json!({"pattern": "helper"})).await.unwrap();
    assert_eq!(prepared.kind, ToolKind::Search);
    let want = format!(
        "3 matches in 3 files for `helper` in {}:\nREADME.md:1:helper docs\nsrc/lib.rs:1:pub fn helper() {{}}\nsrc/main.rs:2:    helper();\n",
        fx.root.display()
    );
    assert_eq!(out.for_model, want);
    assert_eq!(out.raw_output["capped"], false);
}

#[tokio::test]
async fn grep_options_filter_and_fold_case() {
    let fx = project();
    let (_, out) = fx
        .call(
            &Grep,
            json!({"pattern": "^fn \\w+", "glob": "*.rs", "ignore_case": true, "path": "src"}),
        )
        .await
        .unwrap();
    assert!(
        out.for_model.starts_with("2 matches in 2 files"),
        "{}",
        out.for_model
    );
    assert!(out.for_model.contains("src/deep/mod.rs:1:fn Helper() {}\n"));
    assert!(out.for_model.contains("src/main.rs:1:fn main() {\n"));
    let (_, out) = fx
        .call(&Grep, json!({"pattern": "TODO", "path": "src/lib.rs"}))
        .await
        .unwrap();
    assert!(
        out.for_model.contains("src/lib.rs:2:// TODO: more"),
        "{}",
        out.for_model
    );
    fx.write("src/crlf.txt", "end here\r\nnot end here either\r\n");
    let (_, out) = fx
        .call(&Grep, json!({"pattern": "here$", "path": "src/crlf.txt"}))
        .await
        .unwrap();
    assert!(
        out.for_model.ends_with(":\nsrc/crlf.txt:1:end here\n"),
        "{}",
        out.for_model
    );
    let (_, out) = fx.call(&Grep, json!({"pattern": "zzz"})).await.unwrap();
    assert!(out.for_model.starts_with("No matches for `zzz`"));
}

#[tokio::test]
async fn grep_caps_matches_and_says_so() {
    let mut fx = Fixture::new();
    fx.limits.max_results = 10;
    let body: String = (0..100).map(|i| format!("needle {i}\n")).collect();
    for f in 0..5 {
        fx.write(&format!("f{f}.txt"), &body);
    }
    let (_, out) = fx.call(&Grep, json!({"pattern": "needle"})).await.unwrap();
    let lines = out
        .for_model
        .lines()
        .filter(|l| l.contains(":needle "))
        .count();
    assert!((10..=100).contains(&lines), "{lines}");
    assert!(
        out.for_model
            .contains("[results capped (at most 10 matches"),
        "{}",
        out.for_model
    );
    assert_eq!(out.raw_output["capped"], true);
    fx.limits.max_results = 1000;
    fx.limits.output_bytes = 200;
    let (_, out) = fx.call(&Grep, json!({"pattern": "needle"})).await.unwrap();
    assert!(out.for_model.len() < 400, "{}", out.for_model.len());
    assert!(out.for_model.contains("200 bytes"));
}

#[tokio::test]
async fn grep_bad_input() {
    let fx = project();
    let cases = [
        (json!({"pattern": "("}), "invalid regex `(`"),
        (
            json!({"pattern": 3}),
            "at `pattern`: invalid type: integer `3`, expected a string",
        ),
        (
            json!({"pattern": "x", "glob": "[a"}),
            "invalid glob pattern `[a`",
        ),
        (json!({"pattern": "x", "path": "nowhere"}), "not found:"),
        (
            json!({"pattern": "x", "ignore_case": "yes"}),
            "at `ignore_case`",
        ),
    ];
    for (args, want) in cases {
        let err = fx.model_error(&Grep, args.clone()).await;
        assert!(err.contains(want), "{args}: {err}");
    }
}

#[tokio::test]
async fn grep_stops_when_cancelled() {
    let fx = project();
    fx.cancel.cancel();
    assert_eq!(
        fx.call(&Grep, json!({"pattern": "helper"}))
            .await
            .unwrap_err(),
        ToolError::Cancelled
    );
}

#[tokio::test]
async fn glob_matches_names_and_paths_respecting_gitignore() {
    let fx = project();
    let cases = [
        (
            json!({"pattern": "*.rs"}),
            vec!["src/deep/mod.rs", "src/lib.rs", "src/main.rs"],
        ),
        (
            json!({"pattern": "src/*.rs"}),
            vec!["src/lib.rs", "src/main.rs"],
        ),
        (
            json!({"pattern": "src/**/*.rs"}),
            vec!["src/deep/mod.rs", "src/lib.rs", "src/main.rs"],
        ),
        (
            json!({"pattern": "*.rs", "path": "src/deep"}),
            vec!["src/deep/mod.rs"],
        ),
        (json!({"pattern": "*.{md,log}"}), vec!["README.md"]),
        (json!({"pattern": "*.py"}), vec![]),
    ];
    for (args, want) in cases {
        let (_, out) = fx.call(&Glob, args.clone()).await.unwrap();
        let got: Vec<&str> = out.for_model.lines().skip(1).collect();
        assert_eq!(got, want, "{args}");
        assert_eq!(out.raw_output["matches"], want.len(), "{args}");
    }
    let err = fx.model_error(&Glob, json!({"pattern": "a{"})).await;
    assert!(err.contains("invalid glob pattern"), "{err}");
}

#[tokio::test]
async fn glob_caps_results() {
    let mut fx = Fixture::new();
    fx.limits.max_results = 3;
    for i in 0..10 {
        fx.write(&format!("f{i}.txt"), "");
    }
    let (_, out) = fx.call(&Glob, json!({"pattern": "*.txt"})).await.unwrap();
    let lines: Vec<&str> = out.for_model.lines().collect();
    assert!(lines[0].starts_with("10 files match"), "{lines:?}");
    assert_eq!(&lines[1..4], ["f0.txt", "f1.txt", "f2.txt"]);
    assert_eq!(lines[4], "[list capped; narrow the pattern or the path]");
}

#[tokio::test]
async fn list_dir_lists_sorted_with_kinds() {
    let fx = project();
    std::os::unix::fs::symlink("src/main.rs", fx.path("link.rs")).unwrap();
    let (_, out) = fx.call(&ListDir, json!({})).await.unwrap();
    let want = format!(
        "{}: 8 entries\n.gitignore\n.hidden/\nREADME.md\nblob.bin\nlink.rs -> src/main.rs\nrun.log\nsrc/\ntarget/\n",
        fx.root.display()
    );
    assert_eq!(out.for_model, want);
    let err = fx.model_error(&ListDir, json!({"path": "README.md"})).await;
    assert!(err.contains("is a file, not a directory"), "{err}");
    let err = fx.model_error(&ListDir, json!({"path": "nope"})).await;
    assert!(err.contains("directory not found"), "{err}");
}

/// Figure for the issue: grep over a generated 100k-file tree. Prints times, asserts only the
/// match counts. Run it with
/// `cargo test --release --lib bench_grep_100k_files -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "benchmark: creates 100k files and prints timings"]
async fn bench_grep_100k_files() {
    use std::time::Instant;
    let mut fx = Fixture::new();
    fx.limits.max_results = 100_000;
    fx.limits.output_bytes = 64 * 1024 * 1024;
    let started = Instant::now();
    let mut bytes = 0usize;
    for d in 0..1000 {
        let dir = fx.path(&format!("src/m{d:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..100 {
            let n = d * 100 + f;
            let mut body = format!("//! module {n}\nuse std::io;\n\n");
            for l in 0..12 {
                body.push_str(&format!("fn item_{l}_{n}(x: u32) -> u32 {{ x + {l} }}\n"));
            }
            if n % 100 == 7 {
                body.push_str(&format!("// NEEDLE_{n}: find me\n"));
            }
            bytes += body.len();
            std::fs::write(dir.join(format!("f{f:02}.rs")), body).unwrap();
        }
    }
    // An ignored tree the same size would double the work if .gitignore were not respected.
    fx.write(".gitignore", "target/\n");
    for f in 0..1000 {
        fx.write(&format!("target/gen/{f}.rs"), "// NEEDLE_ignored\n");
    }
    println!(
        "tree: 100000 files, {:.1} MB, created in {:.1} s",
        bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    for (label, args, expected) in [
        (
            "rare literal (1000 hits)",
            json!({"pattern": "NEEDLE_\\d+"}),
            1000,
        ),
        (
            "regex with glob filter",
            json!({"pattern": "fn item_11_\\d*7\\(", "glob": "*.rs"}),
            10_000,
        ),
    ] {
        let mut times = Vec::new();
        for _ in 0..3 {
            let t = Instant::now();
            let (_, out) = fx.call(&Grep, args.clone()).await.unwrap();
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(out.raw_output["matches"], expected, "{label}");
        }
        times.sort_by(f64::total_cmp);
        println!(
            "grep {label}: runs {times:.0?} ms, median {:.0} ms",
            times[1]
        );
    }
    let t = Instant::now();
    let (_, out) = fx
        .call(&Glob, json!({"pattern": "f0[0-4].rs"}))
        .await
        .unwrap();
    assert_eq!(out.raw_output["matches"], 5000);
    println!(
        "glob over the same tree: {:.0} ms",
        t.elapsed().as_secs_f64() * 1000.0
    );
}

//! The real local model, end to end through `hearth run` (needs HEARTH_TEST_MODEL, a GGUF of
//! Qwen2.5-Coder-0.5B-Instruct; `.ci/run` fetches it with scripts/fetch-model.sh). It runs on
//! the file the engine runs for the default model here, as users do (`engine_file`): the file
//! itself where hearth's packed kernels serve it, else a Q8_0 copy.
//!
//! A test binary of its own: it keeps both cores busy for minutes, which must not starve the
//! timing-sensitive suites in `tests/all.rs` running beside it.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

use std::path::{Path, PathBuf};
use std::process::Command;

use hearth_backend::Message;
use hearth_local::{
    DeviceChoice, Engine, EngineConfig, EngineEvent, GenerateRequest, GgufFile, Health, Isolation,
    Prompt, SamplingParams, WorkerCommand,
};
use serde_json::Value;

/// The file the engine runs for `original` as the default model on this CPU: `original` itself
/// where the packed kernels serve every matrix of it, else its Q8_0 copy, made once in the
/// target's test directory (a few seconds) rather than beside the download.
fn engine_runs(original: &str) -> PathBuf {
    if GgufFile::open(original.as_ref())
        .unwrap()
        .packs_whole_on_this_cpu()
    {
        return original.into();
    }
    let name = Path::new(original).file_stem().unwrap().to_string_lossy();
    let copy = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-q8_0-run.gguf"));
    hearth_local::requant::q8_0_copy(original.as_ref(), &copy).unwrap();
    copy
}

/// `hearth --config …` with a config whose only endpoint is the engine on `model`, in a home
/// directory of its own (kept alive by the returned guard).
fn hearth_on_local(model: &Path, max_tokens: u32) -> (tempfile::TempDir, Command) {
    let home = tempfile::tempdir().unwrap();
    let command = hearth_in(home.path(), model, max_tokens, "");
    (home, command)
}

/// `hearth --config …` in the home directory `home` (its caches under it too), the engine on
/// `model`, with `more` added to its `[local]` table.
fn hearth_in(home: &Path, model: &Path, max_tokens: u32, more: &str) -> Command {
    let config = home.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[local]\nmodel = \"{}\"\nmax_tokens = {max_tokens}\n{more}",
            model.display()
        ),
    )
    .unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_hearth"));
    command
        .args(["--config", &config.display().to_string()])
        .current_dir(home)
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env_remove("HEARTH_BASE_URL");
    command
}

#[test]
fn hearth_run_answers_a_coding_question_on_the_local_engine() {
    let Ok(model) = std::env::var("HEARTH_TEST_MODEL") else {
        eprintln!("skipped: set HEARTH_TEST_MODEL to a Qwen2.5-Coder GGUF to run this test");
        return;
    };
    let model = engine_runs(&model);
    let (_home, mut hearth) = hearth_on_local(&model, 160);
    let output = hearth
        .args(["run", "--output", "json", "-p"])
        .arg("Write a Rust function `add(a: i32, b: i32) -> i32` that returns the sum. Answer with the code only.")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    // What hearth guarantees, whatever a 0.5B model chooses to say: an answer streamed through
    // the parser, no chat-template markup leaking, and nothing executed that was not declared
    // (this model sometimes writes a fenced call to an invented `add` tool instead of code).
    let text = result["text"].as_str().unwrap();
    assert!(!text.trim().is_empty(), "an answer: {result}");
    for markup in ["<|im_end|>", "<|im_start|>", "<tool_call>"] {
        assert!(!text.contains(markup), "{text}");
    }
    assert!(
        text.contains("add"),
        "the answer is about the question: {text}"
    );
    assert_eq!(
        result["tool_calls"],
        serde_json::json!([]),
        "an undeclared tool never runs"
    );
    assert!(
        matches!(
            result["stop_reason"].as_str(),
            Some("end_turn" | "max_tokens")
        ),
        "{result}"
    );
}

/// The greedy answer of an engine run with `isolation`, and its worker's process id.
fn greedy_answer(model: &Path, isolation: Isolation) -> (String, Option<u32>) {
    let mut config = EngineConfig::new(model);
    config.device = hearth_local::DeviceChoice::Cpu;
    config.max_context = Some(2048);
    config.isolation = isolation;
    let engine = Engine::spawn(config).unwrap();
    assert_eq!(
        engine.wait_ready(std::time::Duration::from_secs(300)),
        Health::Healthy
    );
    let prompt = Prompt::Messages(vec![Message::user(
        "Write a Python function that reverses a string.",
    )]);
    let mut request = GenerateRequest::new(prompt, SamplingParams::greedy());
    request.max_tokens = Some(24);
    let mut events = engine.submit(request);
    let mut text = String::new();
    while let Some(event) = events.blocking_recv() {
        match event {
            EngineEvent::Text(t) => text.push_str(&t),
            EngineEvent::Done(_) => break,
            other if other.is_terminal() => panic!("{other:?}"),
            _ => {}
        }
    }
    (text, engine.worker_pid())
}

#[test]
fn the_hearth_binary_serves_the_engine_in_a_worker_process() {
    let Ok(model) = std::env::var("HEARTH_TEST_MODEL") else {
        eprintln!("skipped: set HEARTH_TEST_MODEL to a Qwen2.5-Coder GGUF to run this test");
        return;
    };
    let model = engine_runs(&model);
    let (in_thread, no_worker) = greedy_answer(&model, Isolation::Thread);
    assert_eq!(no_worker, None);
    let worker = WorkerCommand {
        program: env!("CARGO_BIN_EXE_hearth").into(),
        args: vec!["engine-worker".into()],
        env: Vec::new(),
    };
    let (in_worker, pid) = greedy_answer(&model, Isolation::Process(worker));
    assert!(pid.is_some_and(|pid| pid != std::process::id()));
    assert!(!in_thread.trim().is_empty());
    assert_eq!(
        in_worker, in_thread,
        "the same tokens through `hearth engine-worker`"
    );
}

/// `hearth bench` with no `--model` measures what the engine runs for the default model, and
/// says which file: the download itself where the CPU's packed kernels serve it (any x86 CPU
/// with AVX2), else its Q8_0 copy, made beside the download.
#[test]
fn bench_measures_the_file_the_engine_runs() {
    let Ok(model) = std::env::var("HEARTH_TEST_MODEL") else {
        eprintln!("skipped: set HEARTH_TEST_MODEL to a Qwen2.5-Coder GGUF to run this test");
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let models = home.path().join("cache/hearth/models");
    std::fs::create_dir_all(&models).unwrap();
    let download = models.join(hearth_local::fetch::DEFAULT_MODEL_FILE);
    std::os::unix::fs::symlink(&model, &download).unwrap();
    if hearth_local::fetch::DEFAULT_MODEL_BYTES != std::fs::metadata(&download).unwrap().len() {
        eprintln!("skipped: HEARTH_TEST_MODEL is not the default model's file");
        return;
    }
    let output = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .args(["bench", "--depth", "0", "--no-ttft"])
        .env("HOME", home.path())
        .env("XDG_CACHE_HOME", home.path().join("cache"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let measured = stdout
        .lines()
        .find_map(|l| l.strip_prefix("model"))
        .map(str::trim)
        .unwrap();
    let expected = hearth_local::engine_file(
        &download,
        hearth_local::fetch::DEFAULT_MODEL_ID,
        DeviceChoice::Auto,
    );
    assert_eq!(Path::new(measured), expected, "{stdout}");
    let copy = models.join(format!(
        "{}-q8_0.gguf",
        hearth_local::fetch::DEFAULT_MODEL_ID
    ));
    if hearth_local::Isa::detect().is_some() {
        assert_eq!(Path::new(measured), download.as_path());
        assert!(stdout.contains("Q4_K_M"), "{stdout}");
        assert!(!copy.exists(), "no copy is made where none is run");
    } else {
        assert_eq!(Path::new(measured), copy);
        assert!(stdout.contains("Q8_0"), "{stdout}");
    }
    // Where the system offers transparent huge pages, the packed weights are on them.
    let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled");
    if thp.is_ok_and(|t| t.contains("[madvise]") || t.contains("[always]")) {
        let pages = stdout.lines().find_map(|l| l.strip_prefix("pages"));
        let huge_mib = pages
            .and_then(|p| p.split_whitespace().next())
            .and_then(|mib| mib.parse::<u64>().ok());
        assert!(huge_mib.is_some_and(|mib| mib > 0), "{stdout}");
    }
}

#[test]
fn hearth_eval_runs_real_tasks_on_the_local_engine_and_reports_each_one() {
    let Ok(model) = std::env::var("HEARTH_TEST_MODEL") else {
        eprintln!("skipped: set HEARTH_TEST_MODEL to a Qwen2.5-Coder GGUF to run this test");
        return;
    };
    let model = engine_runs(&model);
    let (_home, mut hearth) = hearth_on_local(&model, 400);
    // Two one-round tasks: the guarantees need real turns, not minutes of CI.
    let tasks = "server-port,evaluate-expression";
    let output = hearth
        .args([
            "eval",
            "--output",
            "json",
            "--tasks",
            tasks,
            "--timeout",
            "90",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    // What hearth guarantees, whatever the model does: every task ran to an end (its own, or
    // the time limit; never a backend error), in bounded rounds, judged and counted.
    let results = report["tasks"].as_array().unwrap();
    let ids: Vec<&str> = results.iter().map(|t| t["id"].as_str().unwrap()).collect();
    // In the suite's order, whatever order they were named or finished in.
    assert_eq!(ids, ["evaluate-expression", "server-port"]);
    for task in results {
        match task.get("error") {
            None => assert!(task["stop"].is_string(), "{task}"),
            Some(error) => assert!(error.as_str().unwrap().starts_with("timed out"), "{task}"),
        }
        let rounds = task["rounds"].as_u64().unwrap();
        assert!((1..=50).contains(&rounds), "{task}");
        assert!(task["tokens"].as_u64().unwrap() > 0, "{task}");
        assert!(!task["verdicts"].as_array().unwrap().is_empty(), "{task}");
    }
    let passed = results.iter().filter(|t| t["passed"] == true).count();
    assert_eq!(report["passed"].as_u64().unwrap(), passed as u64);
    assert!(
        !stderr.contains("assuming 8192"),
        "the engine knows its window: {stderr}"
    );
}

#[test]
fn a_new_hearth_run_reads_the_system_prompt_from_disk_and_answers_the_same() {
    let Ok(model) = std::env::var("HEARTH_TEST_MODEL") else {
        eprintln!("skipped: set HEARTH_TEST_MODEL to a Qwen2.5-Coder GGUF to run this test");
        return;
    };
    let model = engine_runs(&model);
    let home = tempfile::tempdir().unwrap();
    // The project is a directory of its own, the same in every run: the project map put before
    // the prompt would otherwise list the logs and caches the earlier runs left in `home`, and
    // each run would ask a different question.
    let project = home.path().join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(project.join("README.md"), "# sums\n").unwrap();
    // One `hearth run` in `project`; its answer and its log.
    let run = |prompt: &str, more: &str, log: &str| {
        let log = home.path().join(log);
        let started = std::time::Instant::now();
        let output = hearth_in(home.path(), &model, 24, more)
            .current_dir(&project)
            .env("HEARTH_LOG_FILE", &log)
            .args(["run", "-p", prompt])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stderr}");
        eprintln!(
            "{prompt:?} {more:?}: {:.1} s",
            started.elapsed().as_secs_f32()
        );
        let log = std::fs::read_to_string(log).unwrap_or_default();
        (String::from_utf8_lossy(&output.stdout).into_owned(), log)
    };
    const FROM_DISK: &str = "system turn read from disk";
    let (_, first) = run("What is 2 + 2?", "", "first.log");
    assert!(!first.contains(FROM_DISK), "{first}");
    // Each system turn the run's requests opened with, saved once however many rounds it
    // took: the agent's own, and those of the requests of their own it made (the answer
    // digest, where the model called tools and then lost the question: `agent/digest.rs`).
    let saved: Vec<_> = walk(&home.path().join("cache/hearth/prefixes"));
    let saves: Vec<&str> = first
        .lines()
        .filter(|line| line.contains("prefix store: system turn saved"))
        .collect();
    assert!(!saved.is_empty(), "{first}");
    assert_eq!(saves.len(), saved.len(), "{saved:?}\n{first}");
    for path in &saved {
        let named = path.display().to_string();
        assert_eq!(
            saves.iter().filter(|line| line.contains(&named)).count(),
            1,
            "{named} saved once: {first}"
        );
    }

    // A new session: another process, another question, the same project.
    let (cached, log) = run("What is 3 + 3?", "", "second.log");
    assert!(log.contains(FROM_DISK), "{log}");
    let (read, log) = run("What is 3 + 3?", "prompt_cache = false\n", "third.log");
    assert!(!log.contains(FROM_DISK), "{log}");
    assert_eq!(
        cached, read,
        "the saved system turn gives the answer reading it gives"
    );
}

/// Every file under `dir`, at any depth.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.file_type().unwrap().is_dir() {
            files.extend(walk(&entry.path()));
        } else {
            files.push(entry.path());
        }
    }
    files
}

//! End-to-end checks on a real model file. Skipped (with a printed reason) unless
//! `HEARTH_TEST_MODEL` names a Qwen2.5-Coder GGUF (scripts/fetch-model.sh fetches one). Build
//! the engine's dependencies optimized for tests, or run with `--release`.
//!
//! The tests run on the file the engine runs for that download as the default model, as users
//! do (`engine_file`): the file itself where hearth's packed kernels serve every matrix of it
//! (any x86 CPU with AVX2), else a Q8_0 copy, made once per target directory.
// A test binary: panics are the failures.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use candle_core::Device;
use hearth_backend::Message;
use hearth_kernels::Isa;
use hearth_local::{
    Engine, EngineConfig, EngineEvent, GenerateRequest, GgufFile, Health, Prompt, SamplingParams,
};

fn model_path() -> Option<String> {
    match std::env::var("HEARTH_TEST_MODEL") {
        Ok(p) if !p.is_empty() => Some(engine_runs(&p)),
        _ => {
            eprintln!("skipped: set HEARTH_TEST_MODEL to a Qwen2.5-Coder GGUF to run");
            None
        }
    }
}

/// The file the engine runs for `original` on this CPU: `original` where the packed kernels
/// serve all of it, else its Q8_0 copy, made on first use (a few seconds) and shared by the
/// tests.
fn engine_runs(original: &str) -> String {
    static RUNS: OnceLock<String> = OnceLock::new();
    RUNS.get_or_init(|| {
        let file = GgufFile::open(original.as_ref()).unwrap();
        if file.packs_whole_on_this_cpu() {
            return original.to_string();
        }
        let name = Path::new(original).file_stem().unwrap().to_string_lossy();
        let copy = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-q8_0.gguf"));
        hearth_local::requant::q8_0_copy(original.as_ref(), &copy).unwrap();
        copy.to_string_lossy().into_owned()
    })
    .clone()
}

fn answer(path: &str, messages: Vec<Message>, max: usize) -> String {
    let engine = Engine::spawn(EngineConfig::new(path)).unwrap();
    assert_eq!(engine.wait_ready(Duration::from_secs(300)), Health::Healthy);
    let mut req = GenerateRequest::new(Prompt::Messages(messages), SamplingParams::greedy());
    req.max_tokens = Some(max);
    let mut rx = engine.submit(req);
    let mut text = String::new();
    while let Some(ev) = rx.blocking_recv() {
        match ev {
            EngineEvent::Text(t) => text.push_str(&t),
            EngineEvent::Failed { error, .. } => panic!("{error}"),
            _ => {}
        }
    }
    text
}

fn ask_is_even() -> Vec<Message> {
    vec![Message::user(
        "Write a Python function is_even(n) that returns True when n is even. Only the code.",
    )]
}

#[test]
fn answers_a_coding_question_deterministically() {
    let Some(path) = model_path() else { return };
    let ask = ask_is_even;
    let first = answer(&path, ask(), 64);
    eprintln!("{first}");
    assert!(first.contains("def is_even(n)"), "{first}");
    assert!(first.contains("% 2"), "{first}");
    assert_eq!(
        first,
        answer(&path, ask(), 64),
        "greedy output must be deterministic"
    );
}

/// The file as given, whatever the CPU: for the default download, a Q4_K_M file whose
/// weights are Q4_K, Q6_K, Q5_0 and Q8_0. There, where the CPU has a packed kernel, every
/// matmul runs on one (none falls back to candle); and greedy decoding answers correctly.
#[test]
fn the_file_as_downloaded_runs_on_packed_kernels_and_answers() {
    let original = match std::env::var("HEARTH_TEST_MODEL") {
        Ok(p) if !p.is_empty() => p,
        _ => return eprintln!("skipped: set HEARTH_TEST_MODEL to a Qwen2.5-Coder GGUF to run"),
    };
    let model = GgufFile::open(original.as_ref())
        .unwrap()
        .load_model(&Device::Cpu, &mut |_| Ok(()))
        .unwrap();
    let kernels = model.kernels();
    eprintln!("{} on {kernels:?}", model.quantization());
    if let (Some(isa), "Q4_K_M") = (Isa::detect(), model.quantization()) {
        assert!(
            kernels
                .iter()
                .all(|(kernel, _)| kernel.ends_with(&format!(" {isa:?}"))),
            "every matmul packed for {isa:?}: {kernels:?}"
        );
        for format in ["Q4_K", "Q6_K"] {
            let kernel = format!("{format} {isa:?}");
            assert!(kernels.iter().any(|(k, _)| *k == kernel), "{kernel}");
        }
    }
    drop(model);
    let text = answer(&original, ask_is_even(), 64);
    eprintln!("{text}");
    assert!(text.contains("def is_even(n)"), "{text}");
    assert!(text.contains("% 2"), "{text}");
}

#[test]
fn calls_a_tool_in_hermes_format() {
    let Some(path) = model_path() else { return };
    let system = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.\n\n# Tools\n\nYou may call one or more functions \
        to assist with the user query.\n\nYou are provided with function signatures within \
        <tools></tools> XML tags:\n<tools>\n{\"type\": \"function\", \"function\": {\"name\": \
        \"read_file\", \"description\": \"Read a text file\", \"parameters\": {\"type\": \
        \"object\", \"properties\": {\"path\": {\"type\": \"string\"}}, \"required\": \
        [\"path\"]}}}\n</tools>\n\nFor each function call, return a json object with function \
        name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": \
        <function-name>, \"arguments\": <args-json-object>}\n</tool_call>";
    let text = answer(
        &path,
        vec![
            Message::system(system),
            Message::user("Use the read_file tool to read src/main.rs."),
        ],
        80,
    );
    eprintln!("{text}");
    // Qwen2.5-Coder-0.5B often writes the call as a fenced JSON block instead of inside
    // <tool_call> tags; the agent's parser repairs both, so both count here.
    let body = between(&text, "<tool_call>", "</tool_call>")
        .or_else(|| between(&text, "```json", "```"))
        .expect("a tool call");
    let call: serde_json::Value = serde_json::from_str(body.trim()).unwrap();
    assert_eq!(call["name"], "read_file");
    assert_eq!(call["arguments"]["path"], "src/main.rs");
}

/// Everything streamed for `req`, and the decode rate (tokens per second after the first).
fn generate(engine: &Engine, req: GenerateRequest) -> (String, f64) {
    let mut rx = engine.submit(req);
    let mut text = String::new();
    let mut first = None;
    let mut tokens = 0;
    while let Some(ev) = rx.blocking_recv() {
        match ev {
            EngineEvent::Text(t) => {
                first.get_or_insert_with(std::time::Instant::now);
                text.push_str(&t);
            }
            EngineEvent::Usage(usage) => tokens = usage.completion_tokens,
            EngineEvent::Failed { error, .. } => panic!("{error}"),
            _ => {}
        }
    }
    let secs = first.map_or(0.0, |t| t.elapsed().as_secs_f64());
    (text, f64::from(tokens.saturating_sub(1)) / secs.max(1e-9))
}

#[test]
fn every_call_the_grammar_holds_is_well_formed_whatever_the_sampling() {
    let Some(path) = model_path() else { return };
    let alarm = serde_json::json!({"type": "object", "properties": {
        "hour": {"type": "integer"},
        "minute": {"type": "integer"},
        "days": {"type": "array", "items": {"type": "string",
            "enum": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]}},
        "label": {"type": "string"}
    }, "required": ["hour", "minute", "days"]});
    let tools = vec![hearth_backend::ToolSpec {
        name: "set_alarm".into(),
        description: "Set a repeating alarm".into(),
        parameters: alarm,
    }];
    let block = serde_json::json!({"type": "function", "function": tools[0]});
    // The answer is prefilled up to the opening tag, so every run writes a call: what is
    // checked is its form, which the grammar guarantees, not whether the model chose to call.
    let prompt = format!(
        "<|im_start|>system\nYou are a helpful assistant.\n\n# Tools\n\n<tools>\n{block}\n</tools>\n\n\
         For each function call, return a json object with function name and arguments within \
         <tool_call></tool_call> XML tags.<|im_end|>\n<|im_start|>user\nWake me at half past seven \
         every weekday, and call it gym.<|im_end|>\n<|im_start|>assistant\n<tool_call>"
    );
    let engine = Engine::spawn(EngineConfig::new(&path)).unwrap();
    assert_eq!(engine.wait_ready(Duration::from_secs(300)), Health::Healthy);
    let mut runs = vec![SamplingParams::greedy()];
    for seed in 1..=4 {
        runs.push(SamplingParams {
            temperature: 1.0,
            seed,
            ..SamplingParams::default()
        });
    }
    for sampling in runs {
        let mut free = GenerateRequest::new(Prompt::Text(prompt.clone()), sampling.clone());
        free.max_tokens = Some(120);
        let mut held = free.clone();
        held.call_tools = tools.clone();
        let (unheld, free_rate) = generate(&engine, free);
        let (text, held_rate) = generate(&engine, held);
        // Figures for the eye, not checked: the grammar's cost per token.
        eprintln!(
            "unconstrained (seed {}, {free_rate:.1} tok/s): {unheld}",
            sampling.seed
        );
        eprintln!("held ({held_rate:.1} tok/s): {text}");
        let body = text.split("</tool_call>").next().unwrap();
        assert!(text.contains("</tool_call>"), "the call is closed: {text}");
        let call: serde_json::Value = serde_json::from_str(body.trim()).unwrap();
        assert_eq!(call["name"], "set_alarm");
        let args = call["arguments"].as_object().unwrap();
        for key in args.keys() {
            assert!(
                ["hour", "minute", "days", "label"].contains(&key.as_str()),
                "{key}"
            );
        }
        assert!(args["hour"].is_i64() && args["minute"].is_i64(), "{call}");
        for day in args["days"].as_array().unwrap() {
            let day = day.as_str().unwrap();
            assert!(["mon", "tue", "wed", "thu", "fri", "sat", "sun"].contains(&day));
        }
        assert!(args.get("label").is_none_or(serde_json::Value::is_string));
    }
}

fn between<'a>(text: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = text.find(open)? + open.len();
    let end = text[start..].find(close)? + start;
    Some(&text[start..end])
}

//! Parser throughput (MB/s) on prose, tool-heavy and think-heavy output, and the cost per
//! chunk for the 1–20 character chunks backends typically deliver.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hearth::parse::{ParserConfig, StreamEnd, StreamParser, ThinkStart, ToolFormat};
use hearth_backend::ToolSpec;
use serde_json::json;
use std::hint::black_box;

fn tools() -> Vec<ToolSpec> {
    let spec = |name: &str, props: serde_json::Value, req: &[&str]| ToolSpec {
        name: name.into(),
        description: String::new(),
        parameters: json!({"type": "object", "properties": props, "required": req}),
    };
    vec![
        spec("read_file", json!({"path": {"type": "string"}}), &["path"]),
        spec(
            "write_file",
            json!({"path": {"type": "string"}, "content": {"type": "string"}}),
            &["path", "content"],
        ),
        spec(
            "run",
            json!({"command": {"type": "string"}, "timeout": {"type": "integer"}}),
            &["command"],
        ),
    ]
}

const PROSE: &str = "The parser reads the model's answer as it streams. It looks for the few \
bytes that can start markup, such as `a < b` in inline code, and passes everything else through \
unchanged. Most answers are plain explanations of what the agent did, which files it changed \
and why, with the occasional list:\n\n- first, read the file;\n- then, edit it.\n\n";

const HERMES_CALL: &str = "I'll update the file.\n<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"src/lib.rs\", \"content\": \"pub fn add(a: i32, b: i32) -> i32 {\\n    a + b\\n}\\n\\n#[cfg(test)]\\nmod tests {\\n    use super::*;\\n    #[test]\\n    fn adds() { assert_eq!(add(1, 2), 3); }\\n}\\n\"}}\n</tool_call>\n";

const XML_CALL: &str = "<tool_call>\n<function=run>\n<parameter=command>\ncargo test --lib -- --nocapture\n</parameter>\n<parameter=timeout>\n120\n</parameter>\n</function>\n</tool_call>\n";

fn repeat_to(unit: &str, size: usize) -> String {
    let mut s = String::with_capacity(size + unit.len());
    while s.len() < size {
        s.push_str(unit);
    }
    s
}

fn inputs() -> Vec<(&'static str, String)> {
    let size = 1 << 20;
    let think = format!(
        "<think>\n{}</think>\n\n{}",
        repeat_to(PROSE, size - 4096),
        &PROSE[..200]
    );
    vec![
        ("prose", repeat_to(PROSE, size)),
        (
            "tool_heavy",
            repeat_to(&format!("{HERMES_CALL}{XML_CALL}"), size),
        ),
        ("think_heavy", think),
    ]
}

fn config() -> ParserConfig {
    ParserConfig {
        format: ToolFormat::Auto,
        tools: tools(),
        think: ThinkStart::Closed,
        text_calls: Default::default(),
    }
}

/// Feeds `text` in chunks of `n` bytes (at char boundaries) and finishes; returns the event count.
fn parse_chunked(text: &str, n: usize) -> usize {
    let mut p = StreamParser::new(config());
    let mut events = 0;
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + n).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        events += p.feed(&text[start..end]).len();
        start = end;
    }
    events + p.finish(StreamEnd::Stop).len()
}

fn throughput(c: &mut Criterion) {
    let mut g = c.benchmark_group("throughput");
    for (name, text) in inputs() {
        g.throughput(Throughput::Bytes(text.len() as u64));
        // 4 KiB feeds: a whole backend buffer at a time.
        g.bench_with_input(BenchmarkId::new(name, "4KiB feeds"), &text, |b, t| {
            b.iter(|| parse_chunked(black_box(t), 4096))
        });
    }
    g.finish();
}

fn per_chunk(c: &mut Criterion) {
    let mut g = c.benchmark_group("per_chunk");
    let prose = repeat_to(PROSE, 64 << 10);
    let tool = repeat_to(&format!("{HERMES_CALL}{XML_CALL}"), 64 << 10);
    for n in [1usize, 5, 10, 20] {
        for (name, text) in [("prose", &prose), ("tool_heavy", &tool)] {
            g.throughput(Throughput::Elements(text.len().div_ceil(n) as u64));
            g.bench_with_input(
                BenchmarkId::new(name, format!("{n} chars")),
                text,
                |b, t| b.iter(|| parse_chunked(black_box(t), n)),
            );
        }
    }
    g.finish();
}

criterion_group!(benches, throughput, per_chunk);
criterion_main!(benches);

//! What the fake server answers to one chat-completions request.

use std::time::Duration;

use crate::chunks::{
    DONE, chunk_content, chunk_finish, chunk_reasoning, chunk_role, chunk_tool_call, chunk_usage,
};

/// One scripted answer, taken from the queue by `POST /v1/chat/completions`.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Status 200, `content-type: text/event-stream`, chunked transfer encoding: one HTTP chunk
    /// per [`Step::Bytes`]. The body ends properly after the last step.
    Sse(Vec<Step>),
    /// Like [`Reply::Sse`] but close-delimited: no chunking, the connection closes at the end.
    SseUntilClose(Vec<Step>),
    /// Like [`Reply::Sse`] with `content-type: application/x-ndjson`, as Ollama's native
    /// `/api/chat` streams.
    Ndjson(Vec<Step>),
    /// A plain response with this status, extra headers and body (`content-length` is set;
    /// `content-type` defaults to JSON when the body parses as JSON, else text).
    Status {
        code: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// `reply`, with its response headers held back for `delay`.
    Delayed { delay: Duration, reply: Box<Reply> },
}

/// One step of a streamed body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Write these bytes (one HTTP chunk), whatever they cut through.
    Bytes(Vec<u8>),
    /// Wait before the next step.
    Pause(Duration),
    /// Send nothing more; keep the connection open until the client goes away.
    Hang,
    /// Drop the connection at once, without ending the body properly.
    Disconnect,
}

impl Step {
    /// A [`Step::Bytes`] holding `text`.
    pub fn text(text: &str) -> Step {
        Step::Bytes(text.as_bytes().to_vec())
    }

    /// `bytes` cut at the byte offsets `cuts` (ascending; out-of-range ones ignored), with
    /// `pause` between the pieces when given, so each piece reaches the client on its own.
    pub fn split(bytes: &[u8], cuts: &[usize], pause: Option<Duration>) -> Vec<Step> {
        let mut steps = Vec::new();
        let mut start = 0;
        let ends = cuts
            .iter()
            .copied()
            .filter(|&c| c > 0 && c < bytes.len())
            .chain(std::iter::once(bytes.len()));
        for end in ends {
            if end <= start {
                continue;
            }
            if let (Some(pause), false) = (pause, steps.is_empty()) {
                steps.push(Step::Pause(pause));
            }
            steps.push(Step::Bytes(bytes[start..end].to_vec()));
            start = end;
        }
        steps
    }

    /// `bytes` cut into pieces of `size` bytes (the last may be shorter), `pause` between them.
    pub fn every(bytes: &[u8], size: usize, pause: Option<Duration>) -> Vec<Step> {
        let size = size.max(1);
        let cuts: Vec<usize> = (size..bytes.len()).step_by(size).collect();
        Step::split(bytes, &cuts, pause)
    }
}

impl Reply {
    /// An SSE reply writing each frame as its own step.
    pub fn frames<S: AsRef<str>>(frames: &[S]) -> Reply {
        Reply::Sse(frames.iter().map(|f| Step::text(f.as_ref())).collect())
    }

    /// An NDJSON reply writing each line as its own step (see the `ollama_*` builders).
    pub fn ndjson<S: AsRef<str>>(lines: &[S]) -> Reply {
        Reply::Ndjson(lines.iter().map(|l| Step::text(l.as_ref())).collect())
    }

    /// A complete answer: role chunk, one content delta per part, `finish_reason: "stop"`, a
    /// usage chunk (10 prompt tokens, one completion token per part) and `[DONE]`.
    pub fn text(parts: &[&str]) -> Reply {
        Reply::reasoning_then_text(&[], parts)
    }

    /// Like [`Reply::text`], with `reasoning_content` deltas before the content deltas.
    pub fn reasoning_then_text(reasoning: &[&str], text: &[&str]) -> Reply {
        let mut frames = vec![chunk_role()];
        frames.extend(reasoning.iter().map(|r| chunk_reasoning(r)));
        frames.extend(text.iter().map(|t| chunk_content(t)));
        frames.push(chunk_finish("stop"));
        frames.push(chunk_usage(10, count(reasoning.len() + text.len())));
        frames.push(DONE.to_string());
        Reply::frames(&frames)
    }

    /// One native tool call `(id, name)` whose arguments arrive as `fragments`, then
    /// `finish_reason: "tool_calls"`, usage and `[DONE]`.
    pub fn tool_call(id: &str, name: &str, fragments: &[&str]) -> Reply {
        let mut frames = vec![chunk_role()];
        for (i, fragment) in fragments.iter().enumerate() {
            let head = i == 0;
            frames.push(chunk_tool_call(
                0,
                head.then_some(id),
                head.then_some(name),
                fragment,
            ));
        }
        frames.push(chunk_finish("tool_calls"));
        frames.push(chunk_usage(10, count(fragments.len())));
        frames.push(DONE.to_string());
        Reply::frames(&frames)
    }

    /// An OpenAI-style error response: `{"error": {"message": .., "type": .., "code": ..}}`.
    pub fn error(code: u16, message: &str) -> Reply {
        let body = serde_json::json!({
            "error": { "message": message, "type": "fake_error", "code": code }
        });
        Reply::Status {
            code,
            headers: Vec::new(),
            body: body.to_string(),
        }
    }

    /// This reply with its response headers held back for `delay`.
    pub fn after(self, delay: Duration) -> Reply {
        Reply::Delayed {
            delay,
            reply: Box::new(self),
        }
    }
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn joined(steps: &[Step]) -> Vec<u8> {
        steps
            .iter()
            .flat_map(|s| match s {
                Step::Bytes(b) => b.clone(),
                _ => Vec::new(),
            })
            .collect()
    }

    #[test]
    fn split_keeps_every_byte_and_cuts_where_asked() {
        let bytes = "ab😀cd".as_bytes();
        let steps = Step::split(bytes, &[3, 0, 99, 3, 5], None);
        assert_eq!(joined(&steps), bytes);
        let sizes: Vec<usize> = steps
            .iter()
            .map(|s| match s {
                Step::Bytes(b) => b.len(),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(sizes, vec![3, 2, 3]);
    }

    #[test]
    fn every_puts_pauses_between_pieces_only() {
        let pause = Duration::from_millis(1);
        let steps = Step::every(b"abcde", 2, Some(pause));
        assert_eq!(
            steps,
            vec![
                Step::text("ab"),
                Step::Pause(pause),
                Step::text("cd"),
                Step::Pause(pause),
                Step::text("e"),
            ]
        );
    }

    #[test]
    fn text_reply_frames_are_valid_chunks_and_end_with_done() {
        let Reply::Sse(steps) = Reply::text(&["a", "b"]) else {
            panic!("not sse");
        };
        let body = String::from_utf8(joined(&steps)).unwrap();
        assert!(body.ends_with(DONE));
        let frames: Vec<&str> = body.split("\n\n").filter(|f| !f.is_empty()).collect();
        assert_eq!(frames.len(), 6);
        for frame in &frames[..5] {
            let json = frame.strip_prefix("data: ").unwrap();
            let v: serde_json::Value = serde_json::from_str(json).unwrap();
            assert_eq!(v["object"], "chat.completion.chunk");
        }
        assert!(frames[1].contains(r#""content":"a""#));
        assert!(frames[3].contains(r#""finish_reason":"stop""#));
        assert!(frames[4].contains(r#""completion_tokens":2"#));
    }
}

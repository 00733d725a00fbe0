//! The answer's code, checked and fixed (the check_answer_code assist). When a turn ends with
//! an answer whose code its checker finds fault with (see [`super::code_check`]), the fixes
//! the checker itself suggests are made first; what is still wrong is asked for in a short
//! request of its own, with no tool block: first afresh (the user's words and what is wanted),
//! then with the code and the checker's complaint. The requests are not shown as they run;
//! only a fix that passes the check is, after a line that says what was wrong with the code
//! above. When none passes, the user is told that the code fails, and why. The history keeps
//! all that was shown as the turn's last answer.

use futures::StreamExt;
use hearth_backend::{BackendEvent, CompletionRequest, ContentPart};
use hearth_conversation::{AgentEvent, HistoryEntry};

use super::answer_code::fenced_blocks;
use super::code_check::{AnswerCode, CodeLanguage, Fault, answer_code, fault};
use super::request::{own_system, request_of_its_own};
use super::request_fit::RequestShape;
use super::turn_context::TurnContext;
use crate::context::{Budget, MESSAGE_OVERHEAD, TokenCounter};
use crate::tools::{EDIT_FILE, WRITE_FILE};

const FIX_PROMPT: &str = include_str!("../../prompts/code_fix.md");
const FRESH_PROMPT: &str = include_str!("../../prompts/code_fresh.md");

/// Words that open the line before a fixed block. `hearth eval` judges the code after the last
/// of them, as a user reading the answer would take it.
pub const FIXED_CODE: &str = "The fixed code, which";

/// Most tokens a fix may take.
const FIX_MAX_TOKENS: u32 = 2048;

/// Fixes asked for, each with the complaint about the one before.
const FIX_ATTEMPTS: usize = 2;

/// Rounds of the checker's own suggestions made in one piece of code: each can uncover
/// another error with a suggestion of its own.
const SUGGESTION_ROUNDS: usize = 3;

/// Checks the code of the turn's last answer (`history[turn_start..]`, its prompt first) and,
/// where the check fails, asks for it fixed. `request` is the user's words.
pub async fn fix_answer_code(
    ctx: &TurnContext<'_>,
    shape: &RequestShape<'_>,
    history: &mut [HistoryEntry],
    turn_start: usize,
    request: &str,
    budget: &Budget,
) {
    let turn = &history[turn_start..];
    // Code the turn wrote into files is the write check's; an answer's blocks then are mostly
    // echoes of what was written.
    let wrote = turn.iter().any(|entry| {
        matches!(entry, HistoryEntry::Assistant { tool_calls, .. }
            if tool_calls.iter().any(|c| c.name == WRITE_FILE || c.name == EDIT_FILE))
    });
    let Some(HistoryEntry::Assistant {
        text, tool_calls, ..
    }) = turn.last()
    else {
        return;
    };
    if wrote || !tool_calls.is_empty() {
        return;
    }
    let Some(mut code) = answer_code(text, request) else {
        return;
    };
    let Some(found) = checked(ctx, &code).await else {
        return;
    };
    let first_fault = found.complaint.clone();
    tracing::info!(
        language = code.language.name(),
        "the answer's code fails its check"
    );
    // The checker's own suggestions first; then the model, with what is left.
    let mut left = settle(ctx, &mut code, found).await;
    if left.is_some() {
        ctx.client.send(AgentEvent::Notice {
            text: format!(
                "the {} code of the answer {}: asking the model to fix it",
                code.language.name(),
                code.language.fault()
            ),
        });
    }
    for attempt in 0..FIX_ATTEMPTS {
        let Some(fault) = &left else {
            break;
        };
        let ask = if attempt == 0 {
            Ask::Afresh
        } else {
            Ask::WithFault(fault)
        };
        let Some(mut fixed) = ask_for_a_fix(ctx, shape, request, &code, ask, budget).await else {
            break;
        };
        left = match checked(ctx, &fixed).await {
            Some(found) => settle(ctx, &mut fixed, found).await,
            None => None,
        };
        code = fixed;
    }
    if ctx.cancel.is_cancelled() {
        return;
    }
    let shown = match left {
        None => format!(
            "\n\nThe {} code above {} ({}). {FIXED_CODE} {}:\n\n```{}\n{}```",
            code.language.name(),
            code.language.fault(),
            first_line(&first_fault),
            passes(code.language),
            code.language.tag(),
            code.code
        ),
        Some(_) => format!(
            "\n\nNote: the {} code above {}: {}",
            code.language.name(),
            code.language.fault(),
            first_line(&first_fault)
        ),
    };
    ctx.client.send(AgentEvent::AgentText {
        text: shown.clone(),
    });
    if let Some(HistoryEntry::Assistant { text, .. }) = history.last_mut() {
        text.push_str(&shown);
    }
}

/// Makes the checker's own suggestions in `code` while it has some: the complaint left,
/// `None` once the code passes (or the turn is cancelled).
async fn settle(ctx: &TurnContext<'_>, code: &mut AnswerCode, found: Fault) -> Option<String> {
    let mut found = found;
    for _ in 0..SUGGESTION_ROUNDS {
        let Some(suggested) = found.suggested.take() else {
            break;
        };
        code.code = suggested;
        match checked(ctx, code).await {
            None => return None,
            Some(next) => found = next,
        }
    }
    Some(found.complaint)
}

/// The checker's fault with `code`; `None` when it passes, cannot be checked, or the turn is
/// cancelled while it runs.
async fn checked(ctx: &TurnContext<'_>, code: &AnswerCode) -> Option<Fault> {
    tokio::select! {
        () = ctx.cancel.cancelled() => None,
        found = fault(code, ctx.cwd) => found,
    }
}

/// What a fixed block does that the broken one did not.
fn passes(language: CodeLanguage) -> &'static str {
    match language {
        CodeLanguage::Rust => "compiles",
        CodeLanguage::Python => "parses",
    }
}

/// The first line of a complaint that says something (rustc's first `error` line).
fn first_line(complaint: &str) -> &str {
    complaint
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("")
}

/// Asks for `code` fixed, and takes the block of the answer in its language; `None` when the
/// request does not fit, fails, is cancelled, or the answer holds no such block.
async fn ask_for_a_fix(
    ctx: &TurnContext<'_>,
    shape: &RequestShape<'_>,
    request: &str,
    code: &AnswerCode,
    ask: Ask<'_>,
    budget: &Budget,
) -> Option<AnswerCode> {
    let fix = fix_request(shape, ctx.system_prompt, request, code, ask, budget)?;
    let answer = answer_text(ctx, shape, fix).await?;
    tracing::debug!(%answer, "the fix of the answer's code");
    // A reasoning model's thoughts come first; the block is in what follows them.
    let answer = answer
        .rsplit_once("</think>")
        .map_or(answer.as_str(), |(_, a)| a);
    let blocks = fenced_blocks(answer);
    // The block tagged with the language, else the only block.
    let fixed = blocks
        .iter()
        .find(|(tag, _)| CodeLanguage::of_tag(tag) == Some(code.language))
        .or(match blocks.as_slice() {
            [only] if only.0.is_empty() => Some(only),
            _ => None,
        })?;
    let fixed = answer_code(
        &format!("```{}\n{}```", code.language.tag(), fixed.1),
        request,
    )?;
    Some(AnswerCode {
        program: code.program,
        ..fixed
    })
}

/// The request that asks for `code` fixed: the user's words, the code, the complaint.
fn fix_request(
    shape: &RequestShape<'_>,
    system_prompt: &str,
    request: &str,
    code: &AnswerCode,
    ask: Ask<'_>,
    budget: &Budget,
) -> Option<CompletionRequest> {
    let language = code.language.name();
    let (purpose, user) = match ask {
        Ask::Afresh => {
            let what = if code.program {
                format!("the whole {language} program, with its main function")
            } else {
                format!("the whole {language} code")
            };
            let user = format!("{request}\n\nWrite {what}, in one fenced code block.");
            (FRESH_PROMPT, user)
        }
        Ask::WithFault(fault) => {
            let what = if code.program {
                "the whole corrected program, with its main function"
            } else {
                "the whole corrected code"
            };
            let checker = match code.language {
                CodeLanguage::Rust => "rustc",
                CodeLanguage::Python => "python3",
            };
            let user = format!(
                "{request}\n\nYour answer's code:\n```{}\n{}```\n\n{checker} says it {}:\n{fault}\n\n\
                 Write {what}, in one fenced code block.",
                code.language.tag(),
                code.code,
                code.language.fault(),
            );
            (FIX_PROMPT, user)
        }
    };
    let counter = shape
        .context
        .counter(shape.endpoint.backend.as_ref(), shape.model);
    let asked = counter.count(&own_system(purpose, system_prompt))
        + counter.count(&user)
        + 2 * MESSAGE_OVERHEAD;
    let max_tokens = budget.max_tokens.min(FIX_MAX_TOKENS);
    if asked + max_tokens as usize > budget.window.saturating_sub(budget.margin) as usize {
        return None;
    }
    Some(request_of_its_own(
        shape,
        purpose,
        system_prompt,
        vec![ContentPart::text(user)],
        max_tokens,
    ))
}

/// How a fix is asked for.
#[derive(Debug, Clone, Copy)]
enum Ask<'a> {
    /// The request alone, in a request of its own: given its broken code back, the 0.5B
    /// mends the error and keeps the rest, wrong as it may be (a FizzBuzz on one line, to 10);
    /// asked afresh, it writes the program from the start.
    Afresh,
    /// The code and the checker's complaint about it.
    WithFault(&'a str),
}

/// The text of `request`'s answer, not shown; its usage is reported as a round's. `None` when
/// the request fails or is cancelled.
async fn answer_text(
    ctx: &TurnContext<'_>,
    shape: &RequestShape<'_>,
    request: CompletionRequest,
) -> Option<String> {
    let window = request.context_window.unwrap_or_default();
    let mut stream = shape
        .endpoint
        .backend
        .stream(request, ctx.cancel.child_token());
    let mut text = String::new();
    let mut used = 0;
    while let Some(event) = stream.next().await {
        if ctx.cancel.is_cancelled() {
            return None;
        }
        match event {
            Ok(BackendEvent::Text { text: chunk }) => text.push_str(&chunk),
            Ok(BackendEvent::Usage { usage }) => {
                used = u64::from(usage.prompt_tokens) + u64::from(usage.completion_tokens);
            }
            Ok(_) => {}
            Err(err) => {
                tracing::warn!(error = %err, "the request for a fix of the answer's code failed");
                return None;
            }
        }
    }
    ctx.client.send(AgentEvent::Usage {
        used,
        size: u64::from(window),
    });
    Some(text)
}

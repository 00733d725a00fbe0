//! The REPL as the agent's front end: events go to the screen, permission questions to the
//! person at the terminal (or the next line of piped input).

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use hearth_conversation::{AgentEvent, PermissionAnswer, Reach, ToolCard};
use tokio_util::sync::CancellationToken;

use super::commands::parse_answer;
use super::input::{AnswerLine, Input};
use super::screen::Screen;
use crate::host::LocalFrontEnd;

/// The [`LocalFrontEnd`] of the REPL.
pub struct ReplFront {
    screen: Arc<Screen>,
    input: Arc<Input>,
    /// The running turn's cancel token: a question stops waiting when it fires.
    turn: Mutex<CancellationToken>,
    /// One question at a time, even if tool calls run side by side.
    asking: tokio::sync::Mutex<()>,
}

impl ReplFront {
    pub fn new(screen: Arc<Screen>, input: Arc<Input>) -> Self {
        Self {
            screen,
            input,
            turn: Mutex::new(CancellationToken::new()),
            asking: tokio::sync::Mutex::new(()),
        }
    }

    /// Ties questions to the turn that is starting.
    pub fn start_turn(&self, cancel: CancellationToken) {
        *self.turn.lock().unwrap_or_else(PoisonError::into_inner) = cancel;
    }

    fn cancel_token(&self) -> CancellationToken {
        self.turn
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

#[async_trait]
impl LocalFrontEnd for ReplFront {
    async fn request_permission(&self, card: &ToolCard, reach: Reach) -> PermissionAnswer {
        let cancel = self.cancel_token();
        let _one_at_a_time = tokio::select! {
            biased;
            () = cancel.cancelled() => return PermissionAnswer::Cancelled,
            guard = self.asking.lock() => guard,
        };
        self.screen.apply(|r| r.permission_question(card, reach));
        // A terminal echoes what was typed; piped answers are echoed so transcripts read well.
        let echo = !self.input.is_editor();
        loop {
            match self.input.read_answer(&cancel).await {
                AnswerLine::Line(text) => {
                    self.screen
                        .apply(|r| r.answered(echo.then_some(text.as_str())));
                    if let Some(answer) = parse_answer(&text) {
                        return answer;
                    }
                    self.screen.apply(|r| r.permission_question(card, reach));
                }
                AnswerLine::Eof => {
                    self.screen
                        .apply(|r| r.answered(Some("(end of input: no)")));
                    return PermissionAnswer::RejectOnce;
                }
                AnswerLine::Cancelled => return PermissionAnswer::Cancelled,
            }
        }
    }

    fn send(&self, event: AgentEvent) {
        self.screen.event(&event);
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::repl::render::Renderer;
    use crate::repl::style::Style;
    use hearth_conversation::{ToolCallId, ToolKind, ToolStatus};

    fn front(answers: &'static str) -> ReplFront {
        let screen = Arc::new(Screen::new(Renderer::new(Style::plain(), PathBuf::new())));
        let input = Arc::new(Input::lines_from(std::io::Cursor::new(answers)));
        ReplFront::new(screen, input)
    }

    fn card() -> ToolCard {
        ToolCard {
            id: ToolCallId::new("c"),
            title: "Run make".into(),
            kind: ToolKind::Execute,
            status: ToolStatus::Pending,
            locations: Vec::new(),
            content: Vec::new(),
            raw_input: serde_json::Value::Null,
        }
    }

    #[tokio::test]
    async fn answers_are_read_in_order_and_a_bad_answer_asks_again() {
        let front = front("what\ny\nN\na\n");
        assert_eq!(
            front.request_permission(&card(), Reach::WithinRoots).await,
            PermissionAnswer::AllowOnce
        );
        assert_eq!(
            front.request_permission(&card(), Reach::WithinRoots).await,
            PermissionAnswer::RejectAlways
        );
        assert_eq!(
            front.request_permission(&card(), Reach::WithinRoots).await,
            PermissionAnswer::AllowAlways
        );
        // Input is over: refuse rather than wait forever.
        assert_eq!(
            front.request_permission(&card(), Reach::WithinRoots).await,
            PermissionAnswer::RejectOnce
        );
    }

    #[tokio::test]
    async fn a_cancelled_turn_stops_the_question_and_leaves_the_next_line_unread() {
        let front = front("y\n");
        let cancel = CancellationToken::new();
        front.start_turn(cancel.clone());
        cancel.cancel();
        assert_eq!(
            front.request_permission(&card(), Reach::WithinRoots).await,
            PermissionAnswer::Cancelled
        );
        front.start_turn(CancellationToken::new());
        assert_eq!(
            front.request_permission(&card(), Reach::WithinRoots).await,
            PermissionAnswer::AllowOnce
        );
    }
}

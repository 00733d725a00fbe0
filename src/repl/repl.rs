//! The loop: read a line, run it as a prompt or a slash command, until /quit or end of input.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hearth_backend::ContentPart;

use super::args::ReplArgs;
use super::commands::{Entry, parse_line};
use super::error::ReplError;
use super::front::ReplFront;
use super::input::{Input, PromptLine};
use super::render::Renderer;
use super::screen::Screen;
use super::sessions::{Stored, open_stored};
use super::style::Style;
use crate::agent::{AgentCore, Session, StopReason, TurnError};
use crate::host::LocalClientOps;

/// The history file, under hearth's data directory.
const HISTORY_FILE: &str = "repl_history";

/// Whether the loop goes on after a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flow {
    Continue,
    Quit,
}

/// Everything the loop and the slash commands work on.
pub(super) struct Repl {
    pub(super) core: Arc<AgentCore>,
    pub(super) cwd: PathBuf,
    pub(super) session: Session,
    pub(super) screen: Arc<Screen>,
    pub(super) front: Arc<ReplFront>,
    pub(super) client: LocalClientOps,
    pub(super) input: Arc<Input>,
}

/// Runs `hearth repl` until the user leaves.
pub async fn run(core: Arc<AgentCore>, args: ReplArgs) -> Result<(), ReplError> {
    let cwd = std::env::current_dir().map_err(ReplError::Cwd)?;
    let cwd = cwd.canonicalize().unwrap_or(cwd);
    let interactive = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let input = Arc::new(if interactive {
        Input::editor(history_file(&core.data_dir))?
    } else {
        Input::lines()
    });
    let screen = Arc::new(Screen::new(Renderer::new(Style::detect(), cwd.clone())));
    let front = Arc::new(ReplFront::new(screen.clone(), input.clone()));
    let session = first_session(&core, &args, &cwd, &screen).await?;
    let mut repl = Repl {
        client: LocalClientOps::new(front.clone()),
        core,
        cwd,
        session,
        screen,
        front,
        input,
    };
    if interactive {
        repl.banner();
    }
    repl.run_loop().await
}

impl Repl {
    async fn run_loop(&mut self) -> Result<(), ReplError> {
        loop {
            let prompt = format!("{}> ", self.session.settings().mode.id());
            let line = match self.input.read_prompt(&prompt).await? {
                PromptLine::Line(line) => line,
                // Ctrl-C at the editor's prompt only clears the line.
                PromptLine::Interrupted if self.input.is_editor() => continue,
                // rustyline already ended the line on Ctrl-D.
                PromptLine::Interrupted | PromptLine::Eof => return Ok(()),
            };
            let flow = match parse_line(&line) {
                Ok(Entry::Blank) => Flow::Continue,
                Ok(Entry::Prompt(text)) => {
                    self.prompt(text).await;
                    Flow::Continue
                }
                Ok(Entry::Command(command)) => self.command(command).await,
                Err(err) => {
                    self.error(&err.to_string());
                    Flow::Continue
                }
            };
            if flow == Flow::Quit {
                return Ok(());
            }
        }
    }

    /// Runs one prompt to its end. Ctrl-C (SIGINT: the terminal is in its normal mode while a
    /// turn runs) cancels the turn, and the loop waits for it to wind down.
    async fn prompt(&self, text: String) {
        let ticket = self.session.begin_turn();
        self.front.start_turn(ticket.cancel.clone());
        self.screen.read(Renderer::start_turn);
        let prompt = vec![ContentPart::text(text)];
        let run = self
            .core
            .run_prompt(&self.session, &ticket, prompt, &self.client);
        tokio::pin!(run);
        let outcome = tokio::select! {
            outcome = &mut run => outcome,
            signal = tokio::signal::ctrl_c() => {
                if signal.is_ok() {
                    self.session.cancel();
                }
                run.await
            }
        };
        self.screen.apply(|r| {
            let mut out = r.finish();
            if let Some(closing) = closing_line(r.style(), &outcome) {
                out.push_str(&r.line(&closing));
            }
            out
        });
    }

    fn banner(&self) {
        let settings = self.session.settings();
        let model = settings.model.as_ref().map_or_else(
            || "none (/model to pick one)".to_owned(),
            |m| self.core.catalog.value_id(m),
        );
        let style = self.style();
        self.screen.line(&format!(
            "{} {} · model {model} · mode {} · /help for commands, Ctrl-D to leave",
            style.bold("hearth"),
            env!("CARGO_PKG_VERSION"),
            settings.mode.id(),
        ));
    }

    pub(super) fn style(&self) -> Style {
        self.screen.read(|r| r.style())
    }

    pub(super) fn error(&self, message: &str) {
        let style = self.style();
        self.screen.line(&style.red(message));
    }
}

/// What to say after a turn, if anything.
fn closing_line(style: Style, outcome: &Result<StopReason, TurnError>) -> Option<String> {
    match outcome {
        Ok(StopReason::EndTurn) => None,
        Ok(StopReason::Cancelled) => Some(style.yellow("cancelled")),
        Ok(StopReason::MaxTokens) => {
            Some(style.yellow("stopped: the answer reached the model's output limit (max_tokens)"))
        }
        Ok(StopReason::MaxTurnRequests) => Some(style.yellow(
            "stopped: this turn made as many model requests as allowed (agent.max_turn_requests)",
        )),
        Ok(StopReason::Refusal) => Some(style.yellow("the model refused to answer")),
        Err(err) => Some(style.red(&format!("error: {err}"))),
    }
}

/// The session the REPL starts with: a stored one for `--continue`/`--resume` (when the store
/// can open it), else a new one. `--model` and `--mode` apply either way.
async fn first_session(
    core: &Arc<AgentCore>,
    args: &ReplArgs,
    cwd: &Path,
    screen: &Screen,
) -> Result<Session, ReplError> {
    let model = match &args.model {
        Some(id) => Some(
            core.catalog
                .parse_value_id(id)
                .ok_or_else(|| ReplError::UnknownModel(id.clone()))?,
        ),
        None => None,
    };
    let stored = match (&args.resume, args.continue_last) {
        (Some(id), _) => Some(Stored::Id(id.clone())),
        (None, true) => Some(Stored::Latest),
        (None, false) => None,
    };
    if let Some(which) = stored {
        match open_stored(core, cwd, &which).await {
            Ok(reopened) => {
                for event in &reopened.replay {
                    screen.event(event);
                }
                reopened.session.update_settings(|s| {
                    s.mode = args.mode.unwrap_or(s.mode);
                    if model.is_some() {
                        s.model.clone_from(&model);
                    }
                });
                return Ok(reopened.session);
            }
            Err(err) => screen.line(&err.to_string()),
        }
    }
    let settings = core.default_settings(args.mode, model, &[]);
    Ok(core.new_session(cwd.to_path_buf(), settings))
}

/// `<data dir>/repl_history`, creating the directory; `None` (no saved history) if it cannot be.
fn history_file(data_dir: &Path) -> Option<PathBuf> {
    match crate::store::private_dir_all(data_dir) {
        Ok(()) => Some(data_dir.join(HISTORY_FILE)),
        Err(err) => {
            tracing::warn!(
                "no REPL history: cannot create {}: {err}",
                data_dir.display()
            );
            None
        }
    }
}

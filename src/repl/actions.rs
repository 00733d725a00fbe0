//! What each slash command does to the REPL.

use hearth_conversation::Mode;

use crate::slash::{COMMANDS, SlashCommand};

use super::commands::{REPL_COMMANDS, ReplCommand};
use super::render::Renderer;
use super::repl::{Flow, Repl};
use super::sessions::{SessionsError, Stored, list_stored, open_stored};
use crate::store::StoreError;

impl Repl {
    /// Runs one slash command.
    pub(super) async fn command(&mut self, command: ReplCommand) -> Flow {
        match command {
            ReplCommand::Shared(shared) => self.shared(shared).await,
            ReplCommand::New => {
                self.session = self
                    .core
                    .new_session(self.cwd.clone(), self.session.settings());
                self.screen.read(Renderer::start_session);
                self.screen
                    .line(&format!("new session {}", self.session.id));
            }
            ReplCommand::Thoughts => {
                let shown = self.screen.read(|r| r.toggle_thoughts());
                self.screen.line(if shown {
                    "thoughts: shown"
                } else {
                    "thoughts: hidden"
                });
            }
            ReplCommand::Diff => match self.screen.read(|r| r.last_diff()) {
                Some(diff) => self.screen.line(&diff),
                None => self.screen.line("no file change yet"),
            },
            ReplCommand::Sessions => self.sessions().await,
            ReplCommand::Resume(id) => self.resume(id).await,
            ReplCommand::Quit => return Flow::Quit,
        }
        Flow::Continue
    }

    /// Runs one of the commands every front end offers.
    async fn shared(&self, command: SlashCommand) {
        match command {
            SlashCommand::Mode(None) => self.list_modes(),
            SlashCommand::Mode(Some(id)) => match id.parse::<Mode>() {
                Ok(mode) => {
                    self.session.update_settings(|s| s.mode = mode);
                    self.screen
                        .line(&format!("mode: {} — {}", mode.id(), mode.description()));
                }
                Err(err) => self.error(&err.to_string()),
            },
            SlashCommand::Model(None) => self.list_models().await,
            SlashCommand::Model(Some(id)) => self.switch_model(&id).await,
            SlashCommand::Context => self.context().await,
            SlashCommand::Compact { focus } => self.compact(focus).await,
            SlashCommand::Clear => {
                self.core.clear_context(&self.session).await;
                self.screen.read(Renderer::start_session);
                self.screen.line(
                    "context cleared: the model starts afresh (the conversation stays saved)",
                );
            }
            SlashCommand::Help => self.help(),
        }
    }

    fn list_modes(&self) {
        let current = self.session.settings().mode;
        for mode in Mode::ALL {
            let mark = if mode == current { "*" } else { " " };
            self.screen
                .line(&format!("{mark} {:<13}{}", mode.id(), mode.description()));
        }
    }

    async fn list_models(&self) {
        let current = self.session.settings().model;
        let choices = self.core.catalog.choices().await;
        if choices.is_empty() {
            self.screen.line(
                "no models: configure an endpoint (HEARTH_BASE_URL or [[endpoints]] in the config)",
            );
        }
        for choice in choices {
            let mark = if current.as_ref() == Some(&choice.model) {
                "*"
            } else {
                " "
            };
            let window = choice
                .info
                .context_window
                .map(|w| format!("  [context {w}]"))
                .unwrap_or_default();
            self.screen
                .line(&format!("{mark} {}{window}", choice.value_id));
        }
    }

    async fn switch_model(&self, id: &str) {
        let Some(model) = self.core.catalog.parse_value_id(id) else {
            self.error(&format!("model `{id}`: no endpoint is configured"));
            return;
        };
        let choices = self.core.catalog.choices().await;
        if !choices.is_empty() && !choices.iter().any(|c| c.model == model) {
            let style = self.style();
            self.screen.line(&style.yellow(&format!(
                "note: `{id}` is not among the models its endpoint lists (/model shows them)"
            )));
        }
        let shown = self.core.catalog.value_id(&model);
        self.session.update_settings(|s| s.model = Some(model));
        self.screen.line(&format!("model: {shown}"));
    }

    async fn context(&self) {
        match self.core.context_report(&self.session).await {
            Ok(report) => {
                for line in report.to_string().lines() {
                    self.screen.line(line);
                }
            }
            Err(err) => self.error(&format!("context: {err}")),
        }
    }

    /// Summarises the conversation now; Ctrl-C cancels the summary request.
    async fn compact(&self, focus: Option<String>) {
        let ticket = self.session.begin_turn();
        self.front.start_turn(ticket.cancel.clone());
        let run = self
            .core
            .compact(&self.session, &ticket, focus.as_deref(), &self.client);
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
        match outcome {
            Ok(done) => self.screen.line(&format!(
                "compacted: a {}-token summary stands in for the first {} messages; the next \
                 request carries {} tokens instead of {}",
                done.summary_tokens, done.covers, done.after, done.before
            )),
            Err(err) => self.error(&format!("not compacted: {err}")),
        }
    }

    async fn sessions(&self) {
        match list_stored(&self.core, &self.cwd).await {
            Ok(lines) if lines.is_empty() => self.screen.line("no stored sessions"),
            Ok(lines) => lines.iter().for_each(|l| self.screen.line(l)),
            Err(err) => self.screen.line(&err.to_string()),
        }
    }

    async fn resume(&mut self, id: Option<String>) {
        let which = id.map_or(Stored::Latest, Stored::Id);
        match open_stored(&self.core, &self.cwd, &which).await {
            Ok(reopened) => {
                // Forget the old session's figures first: the replay may carry the new ones.
                self.screen.read(Renderer::start_session);
                for event in &reopened.replay {
                    self.screen.event(event);
                }
                self.session = reopened.session;
                self.screen
                    .line(&format!("resumed session {}", self.session.id));
            }
            // The session asked for is this one: its writer is ours, not another process's.
            Err(SessionsError::Store(StoreError::Busy(id))) if id == self.session.id => {
                self.screen
                    .line(&format!("session {id} is the current session"));
            }
            Err(err) => self.screen.line(&err.to_string()),
        }
    }

    fn help(&self) {
        for command in COMMANDS.iter().chain(REPL_COMMANDS) {
            self.screen
                .line(&format!("  {:<18}{}", command.usage(), command.description));
        }
        self.screen
            .line("  Ctrl-C cancels a running answer; //text sends a prompt starting with `/`.");
    }
}

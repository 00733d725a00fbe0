//! The context window a model is budgeted with, from the most trusted source that knows it:
//! the endpoint's configuration, else what the backend found out (the server's own report, or
//! the engine's), else a small default that is logged as an assumption. Never 128k by default:
//! assuming a window the server does not have is how peers overflow small local models.
//!
//! No network here: each backend describes its models in its own dialect
//! ([`hearth_backend::Backend::describe`]); this module only weighs the answer.

use hearth_backend::{ModelDescription, ServerKind, WindowSource};

/// Window assumed when nothing reports one: small enough for any server hearth talks to.
pub const DEFAULT_WINDOW: u32 = 8192;

/// A model's window, where it came from, and which server answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowInfo {
    pub tokens: u32,
    pub source: WindowSource,
    pub server: ServerKind,
}

/// The window to budget with: `configured` (the endpoint's `context_window`) wins, then what
/// the backend described, then [`DEFAULT_WINDOW`].
pub fn choose_window(configured: Option<u32>, described: &ModelDescription) -> WindowInfo {
    let (tokens, source) = configured
        .filter(|t| *t > 0)
        .map(|t| (t, WindowSource::Config))
        .or(described.window.filter(|(t, _)| *t > 0))
        .unwrap_or_else(|| {
            tracing::warn!(
                tokens = DEFAULT_WINDOW,
                "no context window configured or reported; assuming {DEFAULT_WINDOW} tokens \
                 (set `context_window` for the endpoint to use more)"
            );
            (DEFAULT_WINDOW, WindowSource::Default)
        });
    WindowInfo {
        tokens,
        source,
        server: described.server,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn described(window: Option<(u32, WindowSource)>, server: ServerKind) -> ModelDescription {
        ModelDescription {
            window,
            server,
            ..ModelDescription::unknown()
        }
    }

    #[test]
    fn the_configured_window_wins_and_the_server_is_still_known() {
        let ollama = described(Some((8192, WindowSource::Ollama)), ServerKind::Ollama);
        let info = choose_window(Some(20_000), &ollama);
        assert_eq!(
            info,
            WindowInfo {
                tokens: 20_000,
                source: WindowSource::Config,
                server: ServerKind::Ollama,
            }
        );
    }

    #[test]
    fn the_described_window_comes_next_then_the_default() {
        let engine = described(Some((32_768, WindowSource::Listed)), ServerKind::Engine);
        let info = choose_window(None, &engine);
        assert_eq!((info.tokens, info.source), (32_768, WindowSource::Listed));
        let info = choose_window(Some(0), &engine);
        assert_eq!(info.tokens, 32_768, "a zero in the config is no window");
        let info = choose_window(None, &ModelDescription::unknown());
        assert_eq!(
            (info.tokens, info.source, info.server),
            (DEFAULT_WINDOW, WindowSource::Default, ServerKind::Unknown)
        );
        let zero = described(Some((0, WindowSource::LlamaCpp)), ServerKind::LlamaCpp);
        assert_eq!(choose_window(None, &zero).source, WindowSource::Default);
    }
}

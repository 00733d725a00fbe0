use std::path::{Path, PathBuf};
use std::time::Duration;

use hearth_conversation::Mode;
use toml::Spanned;

use super::error::ConfigError;
use super::file::{FileConfig, FileEndpoint, FileTimeouts};
use crate::parse::ToolFormat;

/// Name of the endpoint made from `HEARTH_BASE_URL` / `HEARTH_MODEL` / `HEARTH_API_KEY`.
pub const ENV_ENDPOINT: &str = "env";
/// Name of the in-process engine's endpoint.
pub const LOCAL_ENDPOINT: &str = "local";
const DEFAULT_MAX_TURN_REQUESTS: u32 = 50;

/// Everything hearth needs to know from the user, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub endpoints: Vec<EndpointConfig>,
    /// `endpoint:model` or a bare model id; the first endpoint's model when unset.
    pub default_model: Option<String>,
    pub default_mode: Mode,
    pub log: LogSettings,
    pub agent: AgentSettings,
    /// The in-process engine, offered as the endpoint `local`; `None` leaves it out.
    pub local: Option<LocalSettings>,
    pub source: ConfigSource,
}

/// The in-process engine's settings (`[local]`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LocalSettings {
    /// A GGUF file; `None` runs the built-in default model (fetched on first use).
    pub model: Option<PathBuf>,
    /// Cap on the context in tokens (bounds memory).
    pub max_context: Option<u32>,
    /// Prompt tokens per prefill step.
    pub prefill_chunk: Option<u32>,
    /// The most tokens one answer may have.
    pub max_tokens: Option<u32>,
    /// Sampling temperature (0 = greedy); default: Qwen's recommended sampling.
    pub temperature: Option<f32>,
    /// Saves the system turn's keys and values for later sessions; `None` means on.
    pub prompt_cache: Option<bool>,
}

/// Where the configuration came from, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSource {
    File(PathBuf),
    /// No file: defaults and environment only.
    Defaults,
}

/// Debug is written by hand (see `secret_view`): it must not print the key or header values.
#[derive(Clone, PartialEq)]
pub struct EndpointConfig {
    pub name: String,
    /// Up to and including `/v1`, e.g. `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    pub api_key: Option<String>,
    /// The model used when none is picked; also offered when the server cannot list models.
    pub model: Option<String>,
    pub context_window: Option<u32>,
    pub max_tokens: Option<u32>,
    /// Sampling temperature sent with each request (0 = greedy); default: the server's.
    pub temperature: Option<f32>,
    /// A `tokenizer.json` for exact token counts; without one they are estimated.
    pub tokenizer: Option<PathBuf>,
    pub tool_format: ToolFormat,
    pub headers: Vec<(String, String)>,
    pub timeouts: Timeouts,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeouts {
    pub connect: Duration,
    /// From sending the request to the first streamed byte (covers a slow prefill).
    pub first_token: Duration,
    /// Longest silence between two chunks once the answer streams.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            first_token: Duration::from_secs(300),
            idle: Duration::from_secs(120),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogSettings {
    pub file: Option<PathBuf>,
    /// An `EnvFilter` directive such as `info` or `hearth=debug`.
    pub level: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AgentSettings {
    /// Model requests one prompt may make before the turn stops with `max_turn_requests`.
    pub max_turn_requests: u32,
    /// Share of the window (0..1) at which the conversation is summarised.
    pub compact_threshold: f64,
    /// The help given to models that need it (all on unless turned off).
    pub assists: super::Assists,
    /// How long one MCP tool call may take before it is cancelled and reported as failed.
    pub mcp_call_timeout_secs: u64,
}

impl Default for AgentSettings {
    fn default() -> Self {
        Self {
            max_turn_requests: DEFAULT_MAX_TURN_REQUESTS,
            compact_threshold: crate::context::DEFAULT_COMPACT_THRESHOLD,
            assists: super::Assists::default(),
            mcp_call_timeout_secs: crate::tools::DEFAULT_MCP_CALL_TIMEOUT_SECS,
        }
    }
}

/// Loads the configuration. `explicit` is `--config`; `env` reads environment variables (passed
/// in so tests need not touch the process environment).
pub fn load(
    explicit: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, ConfigError> {
    let explicit = explicit
        .map(Path::to_path_buf)
        .or_else(|| env("HEARTH_CONFIG").map(PathBuf::from));
    let (text, source) = match explicit {
        Some(path) => {
            let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
                path: path.clone(),
                source,
            })?;
            (text, ConfigSource::File(path))
        }
        None => match dirs::config_dir().map(|d| d.join("hearth").join("config.toml")) {
            Some(path) if path.exists() => {
                let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
                    path: path.clone(),
                    source,
                })?;
                (text, ConfigSource::File(path))
            }
            _ => (String::new(), ConfigSource::Defaults),
        },
    };
    let mut config = parse_str(&text, source, env)?;
    apply_env(&mut config, env)?;
    Ok(config)
}

/// Parses config text; `source` names it in errors; `env` resolves `api_key_env`.
pub fn parse_str(
    text: &str,
    source: ConfigSource,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, ConfigError> {
    let label = match &source {
        ConfigSource::File(p) => p.display().to_string(),
        ConfigSource::Defaults => "(defaults)".to_string(),
    };
    let file: FileConfig = toml::from_str(text).map_err(|e| ConfigError::Syntax {
        path: label.clone(),
        message: syntax_message(text, &e),
    })?;
    let at = |key: &str, span: std::ops::Range<usize>, problem: String| ConfigError::Value {
        path: label.clone(),
        line: line_of(text, span.start),
        key: key.to_string(),
        problem,
    };

    let mut endpoints: Vec<EndpointConfig> = Vec::new();
    for (i, raw) in file.endpoints.into_iter().enumerate() {
        let name_span = raw.name.span();
        let endpoint = resolve_endpoint(raw, i, &at, env)?;
        if endpoints.iter().any(|e| e.name == endpoint.name) {
            let problem = format!(
                "repeats the name `{}`; endpoint names must be unique",
                endpoint.name
            );
            return Err(at(&format!("endpoints[{i}].name"), name_span, problem));
        }
        endpoints.push(endpoint);
    }
    let max_turn_requests = match file.agent.max_turn_requests {
        Some(v) if *v.get_ref() == 0 => {
            return Err(at(
                "agent.max_turn_requests",
                v.span(),
                "must be at least 1".into(),
            ));
        }
        Some(v) => v.into_inner(),
        None => DEFAULT_MAX_TURN_REQUESTS,
    };
    let compact_threshold = match file.agent.compact_threshold {
        Some(v) if !(v.get_ref().is_finite() && *v.get_ref() > 0.0 && *v.get_ref() <= 1.0) => {
            return Err(at(
                "agent.compact_threshold",
                v.span(),
                "must be a share of the window above 0 and at most 1 (0.8 = 80%)".into(),
            ));
        }
        Some(v) => v.into_inner(),
        None => crate::context::DEFAULT_COMPACT_THRESHOLD,
    };
    let mcp_call_timeout_secs = match file.agent.mcp_call_timeout_secs {
        Some(v) if *v.get_ref() == 0 => {
            return Err(at(
                "agent.mcp_call_timeout_secs",
                v.span(),
                "must be at least 1".into(),
            ));
        }
        Some(v) => v.into_inner(),
        None => crate::tools::DEFAULT_MCP_CALL_TIMEOUT_SECS,
    };
    // The engine is on when asked for, and on its own when no server is configured: hearth
    // then works with no setup at all.
    let local = match file.local {
        Some(l) if l.enabled == Some(false) => None,
        Some(l) => {
            for (key, v) in [
                ("local.max_context", &l.max_context),
                ("local.prefill_chunk", &l.prefill_chunk),
            ] {
                if let Some(v) = v
                    && *v.get_ref() == 0
                {
                    return Err(at(key, v.span(), "must be at least 1".into()));
                }
            }
            Some(LocalSettings {
                model: l.model,
                max_context: l.max_context.map(Spanned::into_inner),
                prefill_chunk: l.prefill_chunk.map(Spanned::into_inner),
                max_tokens: l.max_tokens.map(Spanned::into_inner),
                temperature: temperature("local.temperature", l.temperature, &at)?,
                prompt_cache: l.prompt_cache,
            })
        }
        None if endpoints.is_empty() => Some(LocalSettings::default()),
        None => None,
    };
    Ok(Config {
        local,
        endpoints,
        default_model: file.default_model.map(Spanned::into_inner),
        default_mode: file.default_mode.unwrap_or_default(),
        log: LogSettings {
            file: file.log.file,
            level: file.log.level,
        },
        agent: AgentSettings {
            max_turn_requests,
            compact_threshold,
            assists: super::Assists::without(file.agent.assists_off),
            mcp_call_timeout_secs,
        },
        source,
    })
}

type At<'a> = dyn Fn(&str, std::ops::Range<usize>, String) -> ConfigError + 'a;

fn resolve_endpoint(
    raw: FileEndpoint,
    i: usize,
    at: &At<'_>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<EndpointConfig, ConfigError> {
    let key = |k: &str| format!("endpoints[{i}].{k}");
    let name = raw.name.get_ref().trim().to_string();
    if name.is_empty() || name.contains([':', ' ', '/']) {
        return Err(at(
            &key("name"),
            raw.name.span(),
            "must be a non-empty word without `:`, `/` or spaces".into(),
        ));
    }
    // The built-in engine is the endpoint `local`; a server by that name would shadow it (or be
    // taken for it), whether or not the engine is on.
    if name == LOCAL_ENDPOINT {
        return Err(at(
            &key("name"),
            raw.name.span(),
            format!(
                "`{LOCAL_ENDPOINT}` is the built-in engine's name (configured in `[local]`); \
                 give this server another name"
            ),
        ));
    }
    let base_url = validate_url(raw.base_url.get_ref())
        .map_err(|problem| at(&key("base_url"), raw.base_url.span(), problem))?;
    let api_key = match (raw.api_key, raw.api_key_env) {
        (Some(_), Some(var)) => {
            return Err(at(
                &key("api_key_env"),
                var.span(),
                "cannot be used together with api_key".into(),
            ));
        }
        (Some(k), None) => Some(k),
        (None, Some(var)) => match env(var.get_ref()) {
            Some(v) if !v.is_empty() => Some(v),
            _ => {
                tracing::warn!(endpoint = %name, var = %var.get_ref(), "api_key_env names an unset variable; sending no key");
                None
            }
        },
        (None, None) => None,
    };
    for (k, v) in [
        ("context_window", &raw.context_window),
        ("max_tokens", &raw.max_tokens),
    ] {
        if let Some(v) = v
            && *v.get_ref() == 0
        {
            return Err(at(&key(k), v.span(), "must be at least 1".into()));
        }
    }
    Ok(EndpointConfig {
        name,
        base_url,
        api_key,
        model: raw.model.filter(|m| !m.trim().is_empty()),
        context_window: raw.context_window.map(Spanned::into_inner),
        max_tokens: raw.max_tokens.map(Spanned::into_inner),
        temperature: temperature(&key("temperature"), raw.temperature, at)?,
        tokenizer: raw.tokenizer,
        tool_format: raw.tool_format,
        headers: raw.headers.into_iter().collect(),
        timeouts: resolve_timeouts(&raw.timeouts, &|k, span, p| {
            at(&key(&format!("timeouts.{k}")), span, p)
        })?,
    })
}

fn resolve_timeouts(raw: &FileTimeouts, at: &At<'_>) -> Result<Timeouts, ConfigError> {
    let defaults = Timeouts::default();
    let pick = |name: &str, v: &Option<Spanned<f64>>, default: Duration| match v {
        None => Ok(default),
        Some(s) if s.get_ref().is_finite() && *s.get_ref() > 0.0 => {
            Ok(Duration::from_secs_f64(*s.get_ref()))
        }
        Some(s) => Err(at(
            name,
            s.span(),
            "must be a positive number of seconds".into(),
        )),
    };
    Ok(Timeouts {
        connect: pick("connect_secs", &raw.connect_secs, defaults.connect)?,
        first_token: pick(
            "first_token_secs",
            &raw.first_token_secs,
            defaults.first_token,
        )?,
        idle: pick("idle_secs", &raw.idle_secs, defaults.idle)?,
    })
}

fn validate_url(url: &str) -> Result<String, String> {
    let trimmed = url.trim().trim_end_matches('/');
    let rest = trimmed
        .strip_prefix("http://")
        .or_else(|| trimmed.strip_prefix("https://"))
        .ok_or_else(|| format!("must start with http:// or https:// (got `{url}`)"))?;
    if rest.is_empty() || rest.starts_with('/') {
        return Err(format!("has no host (got `{url}`)"));
    }
    Ok(trimmed.to_string())
}

/// Adds the single endpoint described by `HEARTH_BASE_URL` / `HEARTH_MODEL` / `HEARTH_API_KEY`.
fn apply_env(config: &mut Config, env: &dyn Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
    if let Some(level) = env("HEARTH_LOG").filter(|l| !l.is_empty()) {
        config.log.level = Some(level);
    }
    if let Some(file) = env("HEARTH_LOG_FILE").filter(|f| !f.is_empty()) {
        config.log.file = Some(PathBuf::from(file));
    }
    let Some(base_url) = env("HEARTH_BASE_URL").filter(|u| !u.is_empty()) else {
        if env("HEARTH_MODEL").is_some() && config.default_model.is_none() {
            config.default_model = env("HEARTH_MODEL");
        }
        return Ok(());
    };
    let base_url = validate_url(&base_url).map_err(|problem| ConfigError::Env {
        var: "HEARTH_BASE_URL",
        problem,
    })?;
    config.endpoints.retain(|e| e.name != ENV_ENDPOINT);
    config.endpoints.insert(
        0,
        EndpointConfig {
            name: ENV_ENDPOINT.to_string(),
            base_url,
            api_key: env("HEARTH_API_KEY").filter(|k| !k.is_empty()),
            model: env("HEARTH_MODEL").filter(|m| !m.is_empty()),
            context_window: None,
            max_tokens: None,
            temperature: None,
            tokenizer: None,
            tool_format: ToolFormat::Auto,
            headers: Vec::new(),
            timeouts: Timeouts::default(),
        },
    );
    Ok(())
}

/// A sampling temperature: a number from 0 (greedy) to 2.
fn temperature(
    key: &str,
    value: Option<Spanned<f32>>,
    at: &At<'_>,
) -> Result<Option<f32>, ConfigError> {
    match value {
        Some(v) if !(v.get_ref().is_finite() && (0.0..=2.0).contains(v.get_ref())) => Err(at(
            key,
            v.span(),
            "must be a number from 0 (greedy) to 2".into(),
        )),
        other => Ok(other.map(Spanned::into_inner)),
    }
}

/// A TOML error as the user sees it: where, and what is wrong. toml's own rendering quotes the
/// offending source line, which may be `api_key = "…"` or a header carrying a token, so it is
/// not used; and on a line that may hold a secret, quoted values in the message are hidden too.
fn syntax_message(text: &str, err: &toml::de::Error) -> String {
    let message = err.message().trim_end();
    let Some(span) = err.span() else {
        return message.to_owned();
    };
    let line = line_of(text, span.start);
    let source_line = text.lines().nth(line - 1).unwrap_or_default();
    let sensitive = ["key", "token", "secret", "password", "auth", "header", "@"]
        .iter()
        .any(|word| source_line.to_ascii_lowercase().contains(word));
    let message = if sensitive {
        hide_quoted(message)
    } else {
        message.to_owned()
    };
    // The key (never the value) says where, as toml's rendering of the line did.
    match source_line.split_once('=') {
        Some((key, _)) if !key.trim().is_empty() => {
            format!("line {line}, `{}`: {message}", key.trim())
        }
        _ => format!("line {line}: {message}"),
    }
}

/// `text` with the contents of every quoted or backticked run replaced by `…`.
fn hide_quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut open: Option<char> = None;
    for c in text.chars() {
        match open {
            Some(q) if c == q => {
                out.push('…');
                out.push(c);
                open = None;
            }
            Some(_) => {}
            None if matches!(c, '"' | '`' | '\'') => {
                out.push(c);
                open = Some(c);
            }
            None => out.push(c),
        }
    }
    out
}

fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset)
        .map_or(0, |head| head.matches('\n').count())
        + 1
}

#[cfg(test)]
#[path = "resolve_tests.rs"]
mod tests;

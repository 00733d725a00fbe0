//! The config file exactly as written. Unknown keys are rejected (`deny_unknown_fields`) so a
//! typo is an error with a line number rather than a silently ignored setting.

use std::collections::BTreeMap;
use std::path::PathBuf;

use hearth_conversation::Mode;
use serde::Deserialize;
use toml::Spanned;

use crate::parse::ToolFormat;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileConfig {
    /// `endpoint:model` or a bare model id.
    pub default_model: Option<Spanned<String>>,
    pub default_mode: Option<Mode>,
    #[serde(default)]
    pub log: FileLog,
    #[serde(default)]
    pub agent: FileAgent,
    #[serde(default)]
    pub endpoints: Vec<FileEndpoint>,
    pub local: Option<FileLocal>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileLocal {
    pub enabled: Option<bool>,
    pub model: Option<PathBuf>,
    pub max_context: Option<Spanned<u32>>,
    pub prefill_chunk: Option<Spanned<u32>>,
    pub max_tokens: Option<Spanned<u32>>,
    pub temperature: Option<Spanned<f32>>,
    pub prompt_cache: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileLog {
    pub file: Option<PathBuf>,
    pub level: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileAgent {
    pub max_turn_requests: Option<Spanned<u32>>,
    pub compact_threshold: Option<Spanned<f64>>,
    #[serde(default)]
    pub assists_off: Vec<super::Assist>,
    pub mcp_call_timeout_secs: Option<Spanned<u64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileEndpoint {
    pub name: Spanned<String>,
    pub base_url: Spanned<String>,
    pub api_key: Option<String>,
    pub api_key_env: Option<Spanned<String>>,
    pub model: Option<String>,
    pub context_window: Option<Spanned<u32>>,
    pub max_tokens: Option<Spanned<u32>>,
    pub temperature: Option<Spanned<f32>>,
    pub tokenizer: Option<std::path::PathBuf>,
    #[serde(default)]
    pub tool_format: ToolFormat,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub timeouts: FileTimeouts,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileTimeouts {
    pub connect_secs: Option<Spanned<f64>>,
    pub first_token_secs: Option<Spanned<f64>>,
    pub idle_secs: Option<Spanned<f64>>,
}

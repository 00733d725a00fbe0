use std::path::PathBuf;

/// Why the configuration could not be used. Every variant stops start-up with its message:
/// running with a half-understood config would send requests somewhere the user did not mean.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },

    /// Syntax errors, unknown keys and wrongly typed values; toml's message names the key and
    /// shows the line.
    #[error("invalid config {path}: {message}")]
    Syntax { path: String, message: String },

    /// A value of the right type that still makes no sense.
    #[error("invalid config {path}, line {line}: `{key}` {problem}")]
    Value {
        path: String,
        line: usize,
        key: String,
        problem: String,
    },

    /// A value from the environment that makes no sense.
    #[error("invalid environment variable {var}: {problem}")]
    Env { var: &'static str, problem: String },
}

//! Configuration: the TOML file plus environment variables, resolved into one [`Config`].
//!
//! Where the file is: `--config PATH`, else `$HEARTH_CONFIG`, else `<XDG config dir>/hearth/config.toml`
//! (a missing default file is fine; a missing explicit one is an error). `config.example.toml`
//! at the repository root documents every key.

mod assists;
mod error;
mod file;
mod resolve;
mod secret_view;

pub use assists::{Assist, Assists};
pub use error::ConfigError;
pub use resolve::{
    AgentSettings, Config, ConfigSource, EndpointConfig, LOCAL_ENDPOINT, LocalSettings,
    LogSettings, Timeouts, load, parse_str,
};
pub use secret_view::url_without_userinfo;

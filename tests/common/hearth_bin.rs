//! Spawning the real `hearth` binary against fake servers: its path, a config file pointing at
//! them, and the ACP agent handle the SDK client connects to.

use std::path::{Path, PathBuf};

use agent_client_protocol::{AcpAgent, AcpAgentConfig};

pub fn hearth_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_hearth"))
}

/// A config with one endpoint per `(name, base_url, model)`, written to `dir/config.toml`.
pub fn write_config(dir: &Path, endpoints: &[(&str, &str, &str)]) -> PathBuf {
    let mut text = String::new();
    for (name, url, model) in endpoints {
        text.push_str(&format!(
            "[[endpoints]]\nname = \"{name}\"\nbase_url = \"{url}\"\nmodel = \"{model}\"\ntool_format = \"native\"\ncontext_window = 32768\n\
             [endpoints.timeouts]\nconnect_secs = 2\nfirst_token_secs = 5\nidle_secs = 5\n"
        ));
    }
    let path = dir.join("config.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// An endpoint URL nobody listens on: a port bound, then freed.
pub fn dead_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://{}/v1", listener.local_addr().unwrap())
}

/// `hearth` (ACP on stdio) with `config`, its home and data directories under `home`.
pub fn acp_agent(config: &Path, home: &Path) -> AcpAgent {
    AcpAgent::new(
        AcpAgentConfig::new(hearth_bin())
            .args(["--config", &config.display().to_string()])
            .env("HOME", home.display().to_string())
            .env("XDG_DATA_HOME", home.join("data").display().to_string())
            .env("RUST_LOG", "warn"),
    )
}

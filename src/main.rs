//! The `hearth` binary: parses arguments, sets up logging, hands over to a front end.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use hearth::acp::{AcpState, serve_stdio};
use hearth::agent::AgentCore;
use hearth::cli::{Cli, CliCommand, ModelAction};
use hearth::config::{self, Config};
use hearth::endpoints::build_catalog;
use hearth::logging::LogAudience;
use hearth::store::{Store, data_root, private_dir_all};

fn env(key: &str) -> Option<String> {
    std::env::var(key).ok()
}

/// How long tasks get to end once a command has finished or a signal stopped it.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(CliCommand::EngineWorker) = cli.command {
        return engine_worker();
    }
    let config = match config::load(cli.config.as_deref(), &env) {
        Ok(config) => config,
        Err(err) => {
            eprintln!("hearth: {err}");
            return ExitCode::from(2);
        }
    };
    let audience = match cli.command {
        Some(CliCommand::Repl(_) | CliCommand::Run(_) | CliCommand::Eval(_)) => {
            LogAudience::Terminal
        }
        _ => LogAudience::Editor,
    };
    let _log = hearth::logging::init(&config.log, audience);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("hearth: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let command = cli.command.unwrap_or(CliCommand::Acp);
    let result = runtime.block_on(async {
        tokio::select! {
            result = run_command(command, config) => result,
            signal = hearth::shutdown::termination() => {
                // Dropping the command drops every session, terminal and MCP server it
                // holds: their process groups are killed on the way out.
                tracing::info!("{signal}: shutting down");
                Ok(ExitCode::from(signal.exit_code()))
            }
        }
    });
    // Tasks still running (turns, writers) are dropped, killing what they started; a thread
    // blocked on input is not waited for.
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    match result {
        Ok(code) => code,
        Err(err) => {
            tracing::error!("{err:#}");
            eprintln!("hearth: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs one command to its end.
async fn run_command(command: CliCommand, config: Config) -> anyhow::Result<ExitCode> {
    match command {
        CliCommand::Acp => serve(config).await.map(|()| ExitCode::SUCCESS),
        CliCommand::Models => list_models(config).await.map(|()| ExitCode::SUCCESS),
        CliCommand::Parse(args) => {
            let (mut input, mut out) = (std::io::stdin().lock(), std::io::stdout().lock());
            hearth::cli::parse::run(&args, &mut input, &mut out)?;
            Ok(ExitCode::SUCCESS)
        }
        CliCommand::Run(args) => {
            let core = build_core(config)?;
            Ok(ExitCode::from(hearth::batch::run(core, args).await.code()))
        }
        CliCommand::Eval(args) => {
            let mut config = config;
            for assist in &args.without {
                config.agent.assists.turn_off(*assist);
            }
            if let Some(t) = args.temperature {
                config
                    .endpoints
                    .iter_mut()
                    .for_each(|e| e.temperature = Some(t));
                if let Some(local) = &mut config.local {
                    local.temperature = Some(t);
                }
            }
            // Eval sessions are not the user's: none is saved, plans go to a scratch dir. The
            // projects go to fixed paths, which keeps the prompts the same from run to run.
            let projects = data_root(&env)?.join("eval");
            let scratch = tempfile::tempdir()?;
            let catalog = build_catalog(&config)?;
            let core = Arc::new(AgentCore::new(
                config,
                catalog,
                scratch.path().to_path_buf(),
            ));
            hearth::eval::run(core, args, projects).await?;
            Ok(ExitCode::SUCCESS)
        }
        CliCommand::Sessions { action } => {
            let store = Store::new(data_root(&env)?);
            let cwd = std::env::current_dir()?;
            hearth::cli::sessions::run(&store, action, cwd)?;
            Ok(ExitCode::SUCCESS)
        }
        CliCommand::Model { action } => model_command(action).await.map(|()| ExitCode::SUCCESS),
        CliCommand::Bench {
            model,
            depths,
            no_ttft,
            kernels,
        } => bench(model, depths, no_ttft, kernels.into())
            .await
            .map(|()| ExitCode::SUCCESS),
        CliCommand::Repl(args) => {
            let core = build_core(config)?;
            hearth::repl::run(core, args).await?;
            Ok(ExitCode::SUCCESS)
        }
        CliCommand::EngineWorker => Ok(engine_worker()),
    }
}

/// The local engine's worker process. It reads no config (its parent already did and sends
/// what the engine needs) and logs warnings and errors to the stderr it shares with its parent.
fn engine_worker() -> ExitCode {
    let _log = hearth::logging::init(&config::LogSettings::default(), LogAudience::Terminal);
    let input = std::io::BufReader::new(std::io::stdin());
    let exit = hearth_local::engine::serve_worker(input, std::io::stdout());
    ExitCode::from(exit.code())
}

/// The agent core every front end shares, with sessions saved when a data directory exists.
fn build_core(config: Config) -> anyhow::Result<Arc<AgentCore>> {
    let catalog = build_catalog(&config)?;
    let data = data_root(&env).map_err(|e| e.to_string()).and_then(|data| {
        // Private before anything is written there: sessions hold what the model read.
        private_dir_all(&data)
            .map(|()| data.clone())
            .map_err(|e| format!("cannot create {}: {e}", data.display()))
    });
    match data {
        Ok(data) => Ok(Arc::new(
            AgentCore::new(config, catalog, data.clone()).with_store(Store::new(data)),
        )),
        Err(err) => {
            tracing::warn!("sessions will not be saved: {err}");
            // Plans still need a home: a fresh private directory (random name, 0700), never
            // a predictable path in the shared temp dir where anyone can plant a symlink.
            let scratch = tempfile::Builder::new().prefix("hearth-").tempdir()?;
            let dir = scratch.path().to_path_buf();
            Ok(Arc::new(
                AgentCore::new(config, catalog, dir).with_scratch(scratch),
            ))
        }
    }
}

async fn serve(config: Config) -> anyhow::Result<()> {
    let core = build_core(config)?;
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        endpoints = core.catalog.endpoints().len(),
        "serving ACP on stdio"
    );
    let state = Arc::new(AcpState::new(core));
    serve_stdio(state).await.map_err(|e| {
        anyhow::anyhow!("ACP connection failed: {}", hearth::acp::describe_error(&e))
    })?;
    tracing::info!("client closed the connection");
    Ok(())
}

async fn list_models(config: Config) -> anyhow::Result<()> {
    let catalog = build_catalog(&config)?;
    let mut out = std::io::stdout().lock();
    if catalog.endpoints().is_empty() {
        writeln!(
            out,
            "No endpoints configured. Set HEARTH_BASE_URL or add [[endpoints]] to the config file."
        )?;
    }
    for listing in catalog.list_endpoints().await {
        match listing.result {
            Ok(models) => {
                writeln!(
                    out,
                    "{} ({})",
                    listing.endpoint,
                    hearth::config::url_without_userinfo(&listing.base_url)
                )?;
                if models.is_empty() {
                    writeln!(out, "  (no models listed)")?;
                }
                for m in models {
                    let mut details = Vec::new();
                    if let Some(w) = m.context_window {
                        details.push(format!("context {w}"));
                    }
                    if let Some(q) = m.quantization {
                        details.push(q);
                    }
                    let suffix = if details.is_empty() {
                        String::new()
                    } else {
                        format!("  [{}]", details.join(", "))
                    };
                    writeln!(out, "  {}{suffix}", m.id)?;
                }
            }
            Err(err) => writeln!(
                out,
                "{} ({}) UNREACHABLE: {err}",
                listing.endpoint,
                hearth::config::url_without_userinfo(&listing.base_url)
            )?,
        }
    }
    Ok(())
}

async fn model_command(action: ModelAction) -> anyhow::Result<()> {
    match action {
        ModelAction::Pull => {
            let path = tokio::task::spawn_blocking(|| {
                let mut shown = hearth::cli::pull::PullProgress::default();
                let fetched = hearth_local::fetch::fetch_default_model(&mut |p| shown.show(p));
                shown.done();
                fetched
            })
            .await??;
            eprintln!("Ready:");
            println!("{}", path.display());
        }
        ModelAction::List => {
            let models =
                tokio::task::spawn_blocking(hearth_local::fetch::list_cached_models).await??;
            if models.is_empty() {
                println!("No cached models. `hearth model pull` fetches the default one.");
            }
            for (path, bytes) in models {
                println!(
                    "{}  {:.0} MiB",
                    path.display(),
                    bytes as f64 / (1 << 20) as f64
                );
            }
        }
    }
    Ok(())
}

async fn bench(
    model: Option<std::path::PathBuf>,
    depths: Vec<usize>,
    no_ttft: bool,
    kernels: hearth_local::Kernels,
) -> anyhow::Result<()> {
    let path = match model {
        Some(path) => path,
        // What the engine runs for the default model on the device the bench opens.
        None => match hearth_local::fetch::cached_default_model() {
            Some(original) => {
                tokio::task::spawn_blocking(move || {
                    hearth_local::engine_file(
                        &original,
                        hearth_local::fetch::DEFAULT_MODEL_ID,
                        hearth_local::DeviceChoice::Auto,
                    )
                })
                .await?
            }
            None => anyhow::bail!("no model: pass --model PATH or run `hearth model pull` first"),
        },
    };
    let mut config = hearth_local::bench::BenchConfig::new(path);
    if !depths.is_empty() {
        config.depths = depths;
    }
    config.ttft = !no_ttft;
    config.kernels = kernels;
    let report =
        tokio::task::spawn_blocking(move || hearth_local::bench::run_bench(&config)).await??;
    println!("{report}");
    Ok(())
}

//! Command-line arguments.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// hearth: a coding agent for open models. With no command it serves the Agent Client Protocol
/// on stdin/stdout, which is how Zed starts it.
#[derive(Debug, Parser)]
#[command(name = "hearth", version, about, long_about = None)]
pub struct Cli {
    /// Config file (default: $HEARTH_CONFIG, else ~/.config/hearth/config.toml).
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Option<CliCommand>,
}

/// The hidden subcommand the local engine's worker process runs.
pub const ENGINE_WORKER: &str = "engine-worker";

/// What `hearth <subcommand>` runs.
#[derive(Debug, Subcommand)]
pub enum CliCommand {
    /// Serve ACP over stdio (the default).
    Acp,
    /// List the models of every configured endpoint.
    Models,
    /// Run prompts headless: one prompt (-p or stdin) or a batch file.
    Run(crate::batch::RunArgs),
    /// Score a model on the built-in suite of agent tasks (each in a fresh temporary project,
    /// where the model's writes and commands run without asking).
    Eval(crate::eval::EvalArgs),
    /// Parse raw model output from stdin into text, reasoning and tool calls (JSON lines).
    Parse(super::parse::ParseArgs),
    /// The agent in a terminal: a line editor, streamed answers, permission questions.
    Repl(crate::repl::ReplArgs),
    /// Stored sessions: list, show, delete.
    Sessions {
        #[command(subcommand)]
        action: super::sessions::SessionsAction,
    },
    /// The local engine's model files.
    Model {
        #[command(subcommand)]
        action: ModelAction,
    },
    /// Measure the local engine: prefill and decode speed at several depths, cold vs warm turns.
    Bench {
        /// A GGUF file (default: what the engine runs for the cached default model: the
        /// download where the CPU's packed kernels serve it, else its Q8_0 copy, made now if
        /// missing).
        #[arg(long, value_name = "PATH")]
        model: Option<PathBuf>,
        /// Context depths to measure at, comma-separated (default: 0,1024,4096).
        #[arg(long = "depth", value_name = "TOKENS", value_delimiter = ',')]
        depths: Vec<usize>,
        /// Skip the time-to-first-token comparisons, cold/warm and a new session's (the slowest
        /// part).
        #[arg(long)]
        no_ttft: bool,
        /// The matmul kernels to measure: the fastest this CPU runs, one instruction set's
        /// (`avx2` on an AVX-512 machine shows what an AVX2-only CPU gets, `avx-vnni` what
        /// Intel's desktop and laptop CPUs since Alder Lake get), or candle's own.
        #[arg(long, value_enum, default_value = "fastest")]
        kernels: KernelsArg,
    },
    /// Internal: serve the local engine to the hearth that started this process, as JSON
    /// lines on stdin and stdout (the engine runs in a worker process on a GPU, so that a
    /// lost CUDA context ends only the worker).
    #[command(name = ENGINE_WORKER, hide = true)]
    EngineWorker,
}

/// `hearth bench --kernels` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KernelsArg {
    Fastest,
    #[value(name = "avx512-vnni")]
    Avx512Vnni,
    #[value(name = "avx-vnni")]
    AvxVnni,
    Avx2,
    Candle,
}

impl From<KernelsArg> for hearth_local::Kernels {
    fn from(arg: KernelsArg) -> Self {
        use hearth_local::Isa;
        match arg {
            KernelsArg::Fastest => Self::Fastest,
            KernelsArg::Avx512Vnni => Self::Only(Isa::Avx512Vnni),
            KernelsArg::AvxVnni => Self::Only(Isa::AvxVnni),
            KernelsArg::Avx2 => Self::Only(Isa::Avx2),
            KernelsArg::Candle => Self::Candle,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum ModelAction {
    /// Fetch the default model into the cache (verified by sha256).
    Pull,
    /// List cached model files.
    List,
}

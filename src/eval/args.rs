use clap::{Args, ValueEnum};

/// Arguments of `hearth eval`.
#[derive(Debug, Clone, Args)]
pub struct EvalArgs {
    /// The model: `endpoint:model` or a bare model id (default: the configured default).
    #[arg(long)]
    pub model: Option<String>,

    /// Tasks to run: ids, kinds (answer, read, create, edit, run, multi) or prefixes ending in
    /// `*`, comma-separated (default: the whole suite).
    #[arg(long, value_name = "TASKS", value_delimiter = ',')]
    pub tasks: Vec<String>,

    /// Tasks to run at once. A local model runs one request at a time anyway.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=32))]
    pub jobs: u16,

    /// What to print on stdout.
    #[arg(long, value_enum, default_value_t = EvalOutput::Text)]
    pub output: EvalOutput,

    /// Give up on a task after this many seconds (it is judged on what it did by then).
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    pub timeout: u64,

    /// Keep each task's project directory (moved to `eval/kept/<task>` under the data directory, so the next run gets the same paths) and print where it is.
    #[arg(long)]
    pub keep: bool,

    /// Turn these assists off for the run, to measure what each is worth (comma-separated).
    #[arg(long, value_enum, value_name = "ASSISTS", value_delimiter = ',')]
    pub without: Vec<crate::config::Assist>,

    /// Sampling temperature for every request of the run (0 = greedy), overriding the config.
    #[arg(long, value_name = "T", value_parser = parse_temperature)]
    pub temperature: Option<f32>,

    /// List the tasks and exit.
    #[arg(long)]
    pub list: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EvalOutput {
    /// A line per task, the reasons of each failure, and the score.
    Text,
    /// One JSON document: the score and every task's result.
    Json,
}

fn parse_temperature(value: &str) -> Result<f32, String> {
    match value.parse::<f32>() {
        Ok(t) if t.is_finite() && (0.0..=2.0).contains(&t) => Ok(t),
        _ => Err(format!(
            "`{value}` is not a temperature from 0 (greedy) to 2"
        )),
    }
}

//! The `neardup` command line: argument parsing and reporting over the library.
//!
//! Exit codes: 0 success, 1 failure (I/O and the like), 2 bad usage or bad input.

mod dedup;
mod eval;
mod run;
mod synth;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Find duplicate and near-duplicate documents.
#[derive(Debug, Parser)]
#[command(name = "neardup", version, about, long_about = None)]
pub struct Cli {
    /// No progress bars; only errors and results.
    #[arg(short, long, global = true)]
    quiet: bool,
    /// More log output (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Dedup(dedup::DedupArgs),
    Run(run::RunArgs),
    Eval(eval::EvalArgs),
    Gen(synth::GenArgs),
}

/// Parses the process arguments, runs the command and returns its exit code.
pub fn run() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.quiet, cli.verbose);
    crate::progress::set_quiet(cli.quiet);
    let result = match cli.command {
        Command::Dedup(args) => dedup::run(args),
        Command::Run(args) => run::run(args),
        Command::Eval(args) => eval::run(args),
        Command::Gen(args) => synth::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

fn init_logging(quiet: bool, verbose: u8) {
    let default = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, _) => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("neardup={default}")));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

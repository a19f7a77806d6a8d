//! The `neardup` command line: argument parsing and reporting over the library.
//!
//! Exit codes: 0 success, 1 failure (I/O and the like), 2 bad usage or bad input.

/// `println!` for a command's results: standard output that cannot take them (`> /dev/full`)
/// is an error that says so, not a panic. A closed pipe (`| head`) ends the process quietly
/// instead (see main.rs).
/// `outln!(to STREAM; ...)` writes to another stream (see [`report_stream`]).
macro_rules! outln {
    (to $stream:expr; $($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!($stream, $($arg)*).map_err($crate::cli::stdout_failed)?
    }};
    ($($arg:tt)*) => { outln!(to std::io::stdout(); $($arg)*) };
}

/// `print!` as [`outln!`] is `println!`.
macro_rules! out {
    (to $stream:expr; $($arg:tt)*) => {{
        use std::io::Write as _;
        write!($stream, $($arg)*).map_err($crate::cli::stdout_failed)?
    }};
    ($($arg:tt)*) => { out!(to std::io::stdout(); $($arg)*) };
}

mod args;
mod completions;
mod dedup;
mod diff;
mod eval;
mod explain;
mod groups;
mod index;
mod jaccard;
mod label;
mod merge;
mod models;
mod overlap;
mod run;
mod serve;
mod settings;
mod stream;
mod synth;
mod terminal;
mod train;

pub use args::finite;
use args::{COMPARED_TEXT_BYTES, read_text_arg};
use terminal::{colour_on, report_skipped, report_stream, stdout_failed};

use std::process::ExitCode;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::error::Error;

/// Find duplicate and near-duplicate documents.
#[derive(Debug, Parser)]
#[command(
    name = "neardup",
    version,
    about,
    long_about = None,
    after_help = "Examples:\n  neardup run pipelines/minhash.toml\n  \
        neardup dedup corpus.jsonl --out out/ && neardup eval --truth corpus.jsonl --pred out/\n\n\
        Exit codes: 0 success, 1 failure (I/O and the like), 2 bad usage or bad input.\n\
        Logs: -v, -vv or RUST_LOG=neardup=debug (--log-format json for machines); progress bars \
        only on a terminal."
)]
pub struct Cli {
    /// No progress bars and no warnings: only the results (on standard output) and errors;
    /// send standard output to /dev/null for nothing but errors.
    #[arg(short, long, global = true)]
    quiet: bool,
    /// More log output (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// How logs are written: text (for people) or json (one object a line, for log collectors).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// Folder models are fetched to and read from [default: the user cache folder, e.g.
    /// ~/.cache/neardup/models].
    #[arg(long, global = true, env = "NEARDUP_MODELS")]
    models: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Dedup(dedup::DedupArgs),
    Run(run::RunArgs),
    Index(index::IndexArgs),
    Merge(merge::MergeArgs),
    Query(index::QueryArgs),
    Models(models::ModelsArgs),
    Serve(serve::ServeArgs),
    Stream(stream::StreamArgs),
    Groups(groups::GroupsArgs),
    Jaccard(jaccard::JaccardArgs),
    Diff(diff::DiffArgs),
    Explain(explain::ExplainArgs),
    Overlap(overlap::OverlapArgs),
    Sweep(eval::SweepArgs),
    Completions(completions::CompletionsArgs),
    Eval(eval::EvalArgs),
    Gen(synth::GenArgs),
    Train(train::TrainArgs),
    Label(label::LabelArgs),
}

/// Parses the process arguments, runs the command and returns its exit code.
pub fn run() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.quiet, cli.verbose, cli.log_format);
    quiet_library_panics();
    crate::progress::set_quiet(cli.quiet);
    crate::io::remove_scratch_on_interrupt();
    let models = cli
        .models
        .unwrap_or_else(crate::embed::models::default_root);
    let result = match cli.command {
        Command::Dedup(args) => dedup::run(args, &models),
        Command::Run(args) => run::run(args, &models),
        Command::Index(args) => index::run_index(args, &models),
        Command::Merge(args) => merge::run(args, &models),
        Command::Query(args) => index::run_query(args, &models),
        Command::Models(args) => models::run(args, &models),
        Command::Serve(args) => serve::run(args, &models),
        Command::Stream(args) => stream::run(args),
        Command::Groups(args) => groups::run(args),
        Command::Jaccard(args) => jaccard::run(args),
        Command::Diff(args) => diff::run(args),
        Command::Explain(args) => explain::run(args, &models),
        Command::Overlap(args) => overlap::run(args),
        Command::Sweep(args) => eval::sweep(args),
        Command::Completions(args) => {
            completions::run(args, <Cli as clap::CommandFactory>::command())
        }
        Command::Eval(args) => eval::run(args),
        Command::Gen(args) => synth::run(args),
        Command::Train(args) => train::run(args, &models),
        Command::Label(args) => label::run(args, &models),
    };
    // What is still buffered must reach standard output too, or fail as loudly.
    let result = result.and_then(|()| {
        use std::io::Write as _;
        std::io::stdout().flush().map_err(stdout_failed)
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // On the command line a setting is its flag: `--threshold: must lie in ...`.
        Err(Error::Setting { key, message }) => {
            eprintln!("error: {}: {message}", settings::flag(key));
            ExitCode::from(2)
        }
        // Only a signal asks a command to stop; its work has dropped its scratch folders.
        Err(e @ Error::Interrupted) => {
            crate::io::report_interrupted();
            ExitCode::from(e.exit_code())
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// A panic inside a library that neardup guards (see [`crate::foreign`]) becomes an error
/// that says what to do; its raw panic message goes to the debug log instead of the terminal.
fn quiet_library_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if crate::foreign::catching() {
            tracing::debug!(%info, "a library panicked; its message becomes the error");
        } else {
            default(info);
        }
    }));
}

/// How logs are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    /// Lines for people; coloured on a terminal.
    Text,
    /// One JSON object a line.
    Json,
}

fn init_logging(quiet: bool, verbose: u8, format: LogFormat) {
    let default = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, _) => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("neardup={default}")));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => logs.json().try_init(),
        // Colour codes only on a terminal: a log redirected to a file stays plain text.
        LogFormat::Text => logs.with_ansi(colour_on(&std::io::stderr())).try_init(),
    };
}

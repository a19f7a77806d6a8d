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
mod train;

use std::process::ExitCode;

use std::io::Read;
use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};

use crate::error::{Error, Location, Result};
use crate::io::SkipReport;

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

/// Where a command's report for people goes: standard output, or standard error when
/// standard output carries the copy for machines (`--json -`).
fn report_stream(json: Option<&Path>) -> Box<dyn std::io::Write> {
    match json {
        Some(path) if path == Path::new(crate::output::STDOUT) => Box::new(std::io::stderr()),
        _ => Box::new(std::io::stdout()),
    }
}

/// Whether text for `stream` may carry colour codes: on a terminal, unless `NO_COLOR` is set
/// (<https://no-color.org>).
fn colour_on(stream: &impl std::io::IsTerminal) -> bool {
    stream.is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Standard output could not be written.
fn stdout_failed(e: std::io::Error) -> Error {
    Error::io(Path::new("standard output"), e)
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
        Command::Merge(args) => merge::run(args),
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
        Command::Completions(args) => completions::run(args),
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

/// Parses a number that must be finite: `NaN` and `inf` parse as floats, and would otherwise
/// reach the settings as JSON's `null`, which reads as "not given".
pub fn finite<T: std::str::FromStr + Into<f64> + Copy>(
    value: &str,
) -> std::result::Result<T, String> {
    match value.parse::<T>() {
        Ok(number) if number.into().is_finite() => Ok(number),
        Ok(_) => Err(format!("{value} is not a finite number")),
        Err(_) => Err(format!("{value} is not a number")),
    }
}

/// The text of a file, or of standard input for `-`, of at most `limit` bytes: a longer one
/// is refused once `limit` bytes are read, so that no more is held. `flag`, where the command
/// has one, raises the limit.
fn read_text_arg(path: &Path, limit: usize, flag: Option<&str>) -> Result<String> {
    let mut bytes = Vec::new();
    let read = |source: &mut dyn Read, bytes: &mut Vec<u8>| {
        source
            .take(limit as u64 + 1)
            .read_to_end(bytes)
            .map_err(|e| Error::io(path, e))
    };
    if path == Path::new("-") {
        read(&mut std::io::stdin(), &mut bytes)?;
    } else {
        let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        read(&mut file, &mut bytes)?;
    }
    if bytes.len() > limit {
        return Err(Error::input(
            Location::file(path),
            None,
            format!("the text is longer than {limit} bytes, the most read"),
            match flag {
                Some(flag) => format!("give a larger {flag}, or a shorter text"),
                None => "give a shorter text".to_owned(),
            },
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        Error::input(
            Location::file(path),
            None,
            format!(
                "not valid UTF-8 (byte {})",
                e.utf8_error().valid_up_to() + 1
            ),
            "convert the file to UTF-8",
        )
    })
}

/// The longest text read from a file by the commands that compare two or a few
/// (`jaccard`, `diff`, `overlap`).
const COMPARED_TEXT_BYTES: usize = crate::io::DEFAULT_MAX_DOC_BYTES;

/// Prints the skipped-record report, if anything was skipped.
fn report_skipped(skipped: &SkipReport) {
    if skipped.count > 0 {
        eprintln!("skipped {} invalid records; the first:", skipped.count);
        for problem in &skipped.first {
            eprintln!("  {problem}");
        }
    }
}

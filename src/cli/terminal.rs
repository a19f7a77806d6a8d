//! What a command writes for people: where its report goes, whether it may colour it, and
//! the skipped records.

use std::path::Path;

use crate::error::Error;
use crate::io::SkipReport;

/// Where a command's report for people goes: standard output, or standard error when
/// standard output carries the copy for machines (`--json -`).
pub(super) fn report_stream(json: Option<&Path>) -> Box<dyn std::io::Write> {
    match json {
        Some(path) if path == Path::new(crate::output::STDOUT) => Box::new(std::io::stderr()),
        _ => Box::new(std::io::stdout()),
    }
}

/// Whether text for `stream` may carry colour codes: on a terminal, unless `NO_COLOR` is set
/// (<https://no-color.org>).
pub(super) fn colour_on(stream: &impl std::io::IsTerminal) -> bool {
    stream.is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Standard output could not be written.
pub(super) fn stdout_failed(e: std::io::Error) -> Error {
    Error::io(Path::new("standard output"), e)
}

/// Prints the skipped-record report, if anything was skipped.
pub(super) fn report_skipped(skipped: &SkipReport) {
    if skipped.count > 0 {
        eprintln!("skipped {} invalid records; the first:", skipped.count);
        for problem in &skipped.first {
            eprintln!("  {problem}");
        }
    }
}

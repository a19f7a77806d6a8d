//! `neardup merge`: the parts of a split two-stage run, made into one run's outputs.

use std::path::PathBuf;

use clap::Args;

use crate::error::Result;
use crate::output::run::RunWriter;
use crate::pipeline;

/// Merge the parts of a split run (`neardup dedup --part I/N`) into pairs, groups and unique
/// records, as one run would have written them.
#[derive(Debug, Args)]
#[command(after_help = "Example (four workers sharing one index):\n  \
    neardup index corpus.jsonl --index idx/\n  \
    neardup dedup corpus.jsonl --index idx/ --part 1/4 --out part1/   # ... up to 4/4\n  \
    neardup merge part1/ part2/ part3/ part4/ --out out/")]
pub struct MergeArgs {
    /// The output folders of every part.
    #[arg(required = true, value_parser = crate::settings::RecordedPath)]
    parts: Vec<PathBuf>,
    /// Output folder (created if missing).
    #[arg(long, value_parser = crate::settings::RecordedPath)]
    out: PathBuf,
}

pub fn run(args: MergeArgs) -> Result<()> {
    super::run::check_output_dir(&args.out)?;
    let lock = RunWriter::lock(&args.out)?;
    let merged = pipeline::merge(&args.parts, &args.out)?;
    let settings = serde_json::to_value(&merged.spec).expect("settings serialise");
    let summary = pipeline::write_results(
        lock,
        &merged.inputs,
        &merged.read,
        &merged.dedup,
        &merged.spec.output,
        settings,
    )?;
    super::run::report(&summary, &args.out)?;
    super::report_skipped(&merged.dedup.corpus.skipped);
    Ok(())
}

//! `neardup merge`: the parts of a split run, made into one run's outputs; with `--part`, the
//! band-and-confirm stage of a split MinHash run, or a two-stage run's search of the cells a
//! part owns or its confirming of a share's candidates; with `--learn-cells`, a two-stage run's
//! cells, learned once.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::error::Result;
use crate::output::run::RunWriter;
use crate::pipeline::{self, Part};

/// Merge the parts of a split run (`neardup dedup --part I/N`) into pairs, groups and unique
/// records, as one run would have written them.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    two-stage, four workers each signing and embedding a share, one process searching:\n  \
    neardup dedup corpus.jsonl --part 1/4 --out embedded1/   # ... up to 4/4\n  \
    neardup merge embedded1/ embedded2/ embedded3/ embedded4/ --out out/\n\n  \
    two-stage, the search split too: the cells learned once, four workers each searching the\n  \
    cells it owns, then each confirming its share's candidates, one process joining:\n  \
    neardup merge embedded1/ embedded2/ embedded3/ embedded4/ --learn-cells --out cells/\n  \
    neardup merge cells/ --part 1/4 --out searched1/   # ... up to 4/4\n  \
    neardup merge searched1/ searched2/ searched3/ searched4/ --part 1/4 --out confirmed1/\n  \
    neardup merge confirmed1/ confirmed2/ confirmed3/ confirmed4/ --out out/\n  \
    (or join the searched parts in one process: neardup merge searched*/ --out out/)\n\n  \
    two-stage, four workers sharing one index:\n  \
    neardup index corpus.jsonl --index idx/\n  \
    neardup dedup corpus.jsonl --index idx/ --part 1/4 --out part1/   # ... up to 4/4\n  \
    neardup merge part1/ part2/ part3/ part4/ --out out/\n\n  \
    MinHash in stages over four workers:\n  \
    neardup dedup corpus.jsonl --method minhash --part 1/4 --out signed1/   # ... up to 4/4\n  \
    neardup merge signed1/ signed2/ signed3/ signed4/ --part 1/4 --out banded1/   # ...\n  \
    neardup merge banded1/ banded2/ banded3/ banded4/ --part 1/4 --out confirmed1/   # ...\n  \
    neardup merge confirmed1/ confirmed2/ confirmed3/ confirmed4/ --out out/\n  \
    (on one machine, the stages left one part at a time: neardup merge signed*/ --out out/)\n\n  \
    The join writes the files the parts were asked for: output flags (--candidates,\n  \
    --no-annotate, --keep, --out-format) go to `neardup dedup --part`. A two-stage join reads\n  \
    the confirmed folders and the embedded folders' sketches.bin only: short of disk, remove\n  \
    the searched folders and the embedded folders' queries.bin and keys-*.bin before it.")]
pub struct MergeArgs {
    /// The output folders of every part.
    #[arg(required = true, value_parser = crate::settings::RecordedPath)]
    parts: Vec<PathBuf>,
    /// Output folder (created if missing).
    #[arg(long, value_parser = crate::settings::RecordedPath)]
    out: PathBuf,
    /// The next stage for part J of N (e.g. 2/4) only, for the last merge to join. MinHash:
    /// band the signed parts given, or confirm the banded parts given. Two-stage: search the
    /// cells part J owns, from the folder of learned cells given; or find and confirm the
    /// candidates of embedded part J's share, from the searched parts given.
    #[arg(long, conflicts_with = "learn_cells")]
    part: Option<Part>,
    /// Two-stage: learn the cells once from the embedded parts given, place every document
    /// and route every title, for `--part J/N` to search.
    #[arg(long)]
    learn_cells: bool,
}

pub fn run(args: MergeArgs, models: &Path) -> Result<()> {
    super::run::check_output_dir(&args.out)?;
    pipeline::check_out(&args.parts, &args.out)?;
    let lock = RunWriter::lock(&args.out)?;
    if args.learn_cells {
        let summary = pipeline::learn_cells(&args.parts, lock)?;
        outln!(
            "cells learned: {} documents placed in {} cells -> {}; search them with `neardup \
             merge {} --part J/N --out searchedJ/`",
            summary.documents,
            summary.cells.unwrap_or(0),
            args.out.display(),
            args.out.display()
        );
        return Ok(());
    }
    if let Some(part) = args.part {
        let summary = pipeline::advance(&args.parts, part, lock)?;
        let (done, found, next) = match summary.settings["stage"].as_str() {
            Some("searched") => (
                "searched",
                format!(
                    "the nearest of {} documents and {} titles found within the cells it owns",
                    summary.candidates, summary.settings["titles_searched"]
                ),
                "confirm each share's candidates with `neardup merge SEARCHED_FOLDERS... \
                 --part I/N` (N the embedded parts), or join with `neardup merge \
                 SEARCHED_FOLDERS... --out DIR`",
            ),
            Some("banded") => (
                "banded",
                format!(
                    "{} candidates routed to the parts that confirm them",
                    summary.candidates
                ),
                "confirm with `neardup merge BANDED_FOLDERS... --part J/N`",
            ),
            _ => (
                "confirmed",
                format!(
                    "{} candidates, {} confirmed pairs",
                    summary.candidates, summary.pairs
                ),
                "join with `neardup merge CONFIRMED_FOLDERS... --out DIR`",
            ),
        };
        outln!(
            "part {part} {done}: {found} -> {}; when all {} parts are {done}, {next}",
            args.out.display(),
            part.count
        );
        return Ok(());
    }
    let merged = pipeline::merge(&args.parts, &args.out, models)?;
    let run = &merged.run;
    let summary = run.write(lock, &merged.dedup, &run.spec().output)?;
    super::run::report(&summary, &args.out)?;
    super::report_skipped(&merged.dedup.corpus.skipped);
    Ok(())
}

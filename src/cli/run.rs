//! `neardup run`: execute a pipeline file; also the shared back end of `neardup dedup`.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::error::{Error, Result};
use crate::eval::render_table;
use crate::output::run::{RunSummary, RunWriter};
use crate::pipeline::{PipelineSpec, Ran, Run};

/// Run a declarative pipeline file (see pipelines/).
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  neardup run pipelines/minhash.toml")]
pub struct RunArgs {
    /// The pipeline TOML file.
    pipeline: PathBuf,
}

pub fn run(args: RunArgs, models: &Path) -> Result<()> {
    let spec = PipelineSpec::load(&args.pipeline)?;
    spec.check_inputs_exist(&args.pipeline)?;
    execute(spec, models)
}

/// Refuses an output folder that cannot be one before any work is done (writing the results
/// would fail only after the whole job).
pub(super) fn check_output_dir(dir: &Path) -> Result<()> {
    match std::fs::metadata(dir) {
        Ok(meta) if !meta.is_dir() => Err(Error::Usage(format!(
            "--out {} is a file, not a folder; give a folder for the results",
            dir.display()
        ))),
        Ok(meta) if meta.permissions().readonly() => Err(Error::Usage(format!(
            "--out {} is read-only; give a folder neardup can write to",
            dir.display()
        ))),
        _ => Ok(()),
    }
}

/// Runs `spec`: deduplicate, write results, print a summary, score if asked.
pub fn execute(spec: PipelineSpec, models: &Path) -> Result<()> {
    check_output_dir(&spec.output.dir)?;
    let lock = RunWriter::lock(&spec.output.dir)?;
    let run = Run::new(spec, models)?;
    let out = run.spec().output.dir.display();
    match run.execute(lock)? {
        Ran::Signed(part, signed) => {
            outln!(
                "part {part}: signed {} documents, its share of the input -> {out}; band and \
                 confirm with `neardup merge SIGNED_FOLDERS... --part J/{}`, or join on one \
                 machine with `neardup merge SIGNED_FOLDERS... --out DIR`",
                signed.summary.documents,
                part.count
            );
            super::report_skipped(&signed.skipped);
        }
        Ran::Embedded(part, embedded) => {
            outln!(
                "part {part}: signed and embedded {} documents, its share of the input -> {out}; \
                 when all {} parts are embedded, search them with `neardup merge \
                 EMBEDDED_FOLDERS... --out DIR`, or learn their cells for parts to search with \
                 `neardup merge EMBEDDED_FOLDERS... --learn-cells --out CELLS`",
                embedded.summary.documents,
                part.count
            );
            super::report_skipped(&embedded.skipped);
        }
        Ran::Part(part, finished) => {
            let summary = &finished.summary;
            outln!(
                "part {part}: {} candidates, {} confirmed pairs among {} documents -> {out}; \
                 merge all {} parts with `neardup merge PART_FOLDERS... --out DIR`",
                summary.candidates,
                summary.pairs,
                summary.documents,
                part.count
            );
            super::report_skipped(&finished.skipped);
        }
        Ran::Whole(finished) => {
            report(&finished.summary, &run.spec().output.dir)?;
            super::report_skipped(&finished.skipped);
            if let Some((added, collection)) = finished.added {
                outln!(
                    "{added} new records added to the collection in {}",
                    collection.display()
                );
            }
            if let Some(evaluation) = finished.evaluation? {
                outln!();
                out!("{}", render_table(&evaluation));
            }
        }
    }
    Ok(())
}

/// Prints a run's counts, speed and (for runs that embed) each stage's time.
pub(super) fn report(summary: &RunSummary, dir: &Path) -> Result<()> {
    let s = &summary.seconds;
    let total = s.sketch + s.embed + s.candidates + s.confirm + s.group + summary.write_seconds;
    outln!(
        "{} documents, {} duplicate pairs, {} groups ({} documents), {} unique records kept -> {} ({:.2} s, {:.0} docs/s)",
        summary.documents,
        summary.pairs,
        summary.groups,
        summary.documents_in_groups,
        summary.unique,
        dir.display(),
        total,
        summary.documents as f64 / total.max(1e-9),
    );
    if summary.collection_reached > 0 {
        outln!(
            "checked against the collection too: {} of its records were candidates",
            summary.collection_reached
        );
    }
    if s.embed > 0.0 {
        // A rate over a few milliseconds (a run within cells stores next to nothing) says
        // nothing.
        let with_rate = |stage: &str, seconds: f64| {
            if seconds >= 0.01 {
                let rate = summary.documents as f64 / seconds;
                format!("{stage} {seconds:.2} s ({rate:.0} docs/s)")
            } else {
                format!("{stage} {seconds:.2} s")
            }
        };
        outln!(
            "stages: read+sign {:.2} s, {}, {}, index build {:.2} s, {}, confirm {:.2} s, group {:.2} s, write {:.2} s",
            s.sketch,
            with_rate("embed", s.embed),
            with_rate("upsert", s.upsert),
            s.index,
            with_rate("search", s.search),
            s.confirm,
            s.group,
            summary.write_seconds
        );
    }
    if let Some(probes) = summary.probes {
        outln!(
            "simhash probing: {probes} probes ({:.1} per document)",
            probes as f64 / summary.documents.max(1) as f64
        );
    }
    Ok(())
}

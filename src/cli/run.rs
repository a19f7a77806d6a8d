//! `neardup run`: execute a pipeline file; also the shared back end of `neardup dedup`.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::error::{Error, Result};
use crate::eval::{Truth, evaluate, load_predictions, render_table};
use crate::output::run::{EVAL, RunFolder, RunSummary, RunWriter};
use crate::output::write_json_pretty;
use crate::pipeline::{self, Method, PipelineSpec};

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
    execute(&spec, models)
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
pub fn execute(spec: &PipelineSpec, models: &Path) -> Result<()> {
    check_output_dir(&spec.output.dir)?;
    let lock = RunWriter::lock(&spec.output.dir)?;
    let inputs = spec.input.inputs()?;
    let read = spec.input.read_options();
    // A format the inputs cannot be written in is refused before the work.
    spec.output.format(&inputs)?;
    let part = spec.method.part();
    if spec.eval.is_some() && part.is_some() {
        return Err(Error::Usage(
            "a part of a split run is scored once the parts are merged: drop [eval], and run \
             `neardup eval` on the folder `neardup merge` writes"
                .into(),
        ));
    }
    if let (Method::MinHash(_), Some(part)) = (&spec.method, part) {
        let signed = pipeline::sign_part(spec, lock)?;
        outln!(
            "part {part}: signed {} documents, its share of the input -> {}; band and \
             confirm with `neardup merge SIGNED_FOLDERS... --part J/{}`, or join on one \
             machine with `neardup merge SIGNED_FOLDERS... --out DIR`",
            signed.summary.documents,
            spec.output.dir.display(),
            part.count
        );
        super::report_skipped(&signed.skipped);
        return Ok(());
    }
    if let (Method::TwoStage(c), Some(part)) = (&spec.method, part)
        && c.index_dir.is_none()
    {
        let embedded = pipeline::embed_part(spec, lock, models)?;
        outln!(
            "part {part}: signed and embedded {} documents, its share of the input -> {}; when \
             all {} parts are embedded, search them with `neardup merge EMBEDDED_FOLDERS... \
             --out DIR`, or learn their cells for parts to search with `neardup merge \
             EMBEDDED_FOLDERS... --learn-cells --out CELLS`",
            embedded.summary.documents,
            spec.output.dir.display(),
            part.count
        );
        super::report_skipped(&embedded.skipped);
        return Ok(());
    }
    // A run that adds to its collection holds it from before reading it until it has added.
    let _adding = pipeline::lock_collection_to_add(&spec.method)?;
    let dedup = pipeline::dedup(&inputs, &read, &spec.method, models)?;
    let settings = serde_json::to_value(spec).expect("settings serialise");
    let keep = &spec.output.keep;
    let mut added = None;
    let summary =
        pipeline::write_results(lock, &inputs, &read, &dedup, &spec.output, settings, || {
            added = pipeline::add_where_asked(&spec.method, &inputs, &read, &dedup, keep, models)?;
            Ok(())
        })?;
    if let Some(part) = dedup.part {
        outln!(
            "part {part}: {} candidates, {} confirmed pairs among {} documents -> {}; \
             merge all {} parts with `neardup merge PART_FOLDERS... --out DIR`",
            summary.candidates,
            summary.pairs,
            summary.documents,
            spec.output.dir.display(),
            part.count
        );
        super::report_skipped(&dedup.corpus.skipped);
        return Ok(());
    }
    report(&summary, &spec.output.dir)?;
    super::report_skipped(&dedup.corpus.skipped);
    if let Some((added, collection)) = added {
        outln!(
            "{added} new records added to the collection in {}",
            collection.display()
        );
    }
    if let Some(eval) = &spec.eval {
        let truth = Truth::load(&eval.truth, &read.fields.id)?;
        let run = RunFolder::open(&spec.output.dir)?;
        let predicted = load_predictions(&run, eval.predicted)?;
        truth.check_run(&eval.truth, &run, &predicted)?;
        let evaluation = evaluate(&truth, &predicted);
        outln!();
        out!("{}", render_table(&evaluation));
        write_json_pretty(&spec.output.dir.join(EVAL), &evaluation)?;
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

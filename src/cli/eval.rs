//! `neardup eval`: score a run's output against labelled duplicates.

use std::path::PathBuf;

use clap::Args;

use crate::error::Error;
use crate::error::Result;
use crate::eval::{
    Predicted, ReportInput, Truth, best, evaluate, load_foreign_groups, load_predictions,
    render_table, sweep as sweep_scores, thresholds, write_report,
};
use crate::io::FieldSpec;
use crate::output::run::{Pairs, RunFolder};
use crate::output::write_json_pretty;

/// Score a dedup output folder against ground truth (CORE 2020 metrics).
#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  neardup eval --truth data/bibdedupe-sample.jsonl --pred out/ --json out/eval.json"
)]
pub struct EvalArgs {
    /// Ground truth in the CORE layout (core_id, labelled_duplicates, cat): JSONL, Parquet,
    /// or CSV/TSV with the duplicates as a JSON list.
    #[arg(long)]
    truth: PathBuf,
    /// Output folder of `neardup dedup`.
    #[arg(long, required_unless_present = "pred_groups")]
    pred: Option<PathBuf>,
    /// Instead of --pred, groups another tool found, scored the same way: JSON Lines, one
    /// group a line, {"members": ["id1", "id2", ...]}.
    #[arg(long, conflicts_with_all = ["pred", "report", "predicted"])]
    pred_groups: Option<PathBuf>,
    /// Also write the metrics as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// A document's predicted duplicates: the rest of its group, or its confirmed pair partners.
    #[arg(long, value_enum, default_value_t = Predicted::Groups)]
    predicted: Predicted,
    /// Id field of the truth file.
    #[arg(long, default_value = crate::io::DEFAULT_ID_FIELD)]
    id_field: String,
    /// Also write a self-contained HTML report here: tables, plots, the worst errors with diffs.
    #[arg(long)]
    report: Option<PathBuf>,
    /// Truth fields whose text the report's diffs show [default: processed_title processed_abstract].
    #[arg(long = "text-field")]
    text_fields: Vec<String>,
}

pub fn run(args: EvalArgs) -> Result<()> {
    let truth = Truth::load(&args.truth, &args.id_field)?;
    let (run, predicted) = match (&args.pred, &args.pred_groups) {
        (Some(dir), _) => {
            let run = RunFolder::open(dir)?;
            let predicted = load_predictions(&run, args.predicted)?;
            truth.check_run(&args.truth, &run, &predicted)?;
            (Some((dir, run)), predicted)
        }
        (None, Some(groups)) => {
            let predicted = load_foreign_groups(groups)?;
            truth.check_predicted(&args.truth, &predicted)?;
            (None, predicted)
        }
        (None, None) => return Err(Error::Usage("give --pred or --pred-groups".into())),
    };
    let evaluation = evaluate(&truth, &predicted);
    out!(to super::report_stream(args.json.as_deref()); "{}", render_table(&evaluation));
    if let Some(path) = &args.json {
        write_json_pretty(path, &evaluation)?;
    }
    if let (Some(path), Some((run_dir, run))) = (&args.report, &run) {
        let fields = FieldSpec {
            id: args.id_field.clone(),
            text: if args.text_fields.is_empty() {
                FieldSpec::default().text
            } else {
                args.text_fields.clone()
            },
        };
        let confirmed = run.read::<Pairs>()?;
        let scored = run.scored_pairs()?;
        let input = ReportInput {
            truth_path: &args.truth,
            fields: &fields,
            truth: &truth,
            run_dir,
            evaluation: &evaluation,
            predicted: &predicted,
            mode: args.predicted,
            confirmed: &confirmed,
            scored: &scored,
            threshold: (run.summary.score.clone(), run.summary.threshold),
            evidence: run.summary.confirmed_by_evidence(),
        };
        write_report(path, &input)?;
        eprintln!("report -> {}", path.display());
    }
    Ok(())
}

/// Re-score a run's stored pair scores at many thresholds (no sketches recomputed) and say
/// which threshold maximises macro-F1. Choose on one labelled set, confirm on another.
#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  neardup sweep --truth labelled.jsonl --pred out/ --from 0.5 --to 1.0 --step 0.02"
)]
pub struct SweepArgs {
    /// Ground truth in the CORE layout (JSONL, Parquet, or CSV/TSV).
    #[arg(long)]
    truth: PathBuf,
    /// Output folder of `neardup dedup` (reads its candidates, else pairs.jsonl).
    #[arg(long)]
    pred: PathBuf,
    /// Lowest threshold.
    #[arg(long, default_value_t = 0.3, value_parser = super::finite::<f64>)]
    from: f64,
    /// Highest threshold.
    #[arg(long, default_value_t = 1.0, value_parser = super::finite::<f64>)]
    to: f64,
    /// Step between thresholds.
    #[arg(long, default_value_t = 0.05, value_parser = super::finite::<f64>)]
    step: f64,
    /// Which stored score to threshold [default: the only one, or jaccard_estimate].
    #[arg(long)]
    score: Option<String>,
    /// A document's predicted duplicates: the rest of its group (single linkage) or its pair partners.
    #[arg(long, value_enum, default_value_t = Predicted::Groups)]
    predicted: Predicted,
    /// Id field of the truth file.
    #[arg(long, default_value = crate::io::DEFAULT_ID_FIELD)]
    id_field: String,
    /// Also write every point as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// The most thresholds one sweep scores: a step of 0.001 over [0, 1]. Each costs a pass over
/// the labels, and a tiny step would ask for trillions.
const MAX_THRESHOLDS: usize = 1001;

/// The score a sweep thresholds when the run stores several: MinHash's estimate.
const JACCARD_ESTIMATE: &str = "jaccard_estimate";

pub fn sweep(args: SweepArgs) -> Result<()> {
    if !(args.step > 0.0 && args.from <= args.to) {
        return Err(Error::Usage("need --step > 0 and --from <= --to".into()));
    }
    let count = (args.to - args.from) / args.step + 1.0;
    if count > MAX_THRESHOLDS as f64 {
        return Err(Error::Usage(format!(
            "--from {} --to {} --step {} makes {count:.0} thresholds; at most {MAX_THRESHOLDS} \
             are scored: raise --step to {} or more, or narrow --from and --to",
            args.from,
            args.to,
            args.step,
            (args.to - args.from) / (MAX_THRESHOLDS - 1) as f64
        )));
    }
    let mut report = super::report_stream(args.json.as_deref());
    let truth = Truth::load(&args.truth, &args.id_field)?;
    let run = RunFolder::open(&args.pred)?;
    truth.check_run(&args.truth, &run, &load_predictions(&run, args.predicted)?)?;
    let pairs = run.scored_pairs()?;
    let names = pairs.names().to_vec();
    // The evidence rule confirms some pairs below the threshold (containment, titles) and
    // refuses some above it (numbers, short texts): a threshold alone is another rule.
    let evidence = run.summary.confirmed_by_evidence();
    let score = match (&args.score, names.as_slice()) {
        (Some(s), _) if names.contains(s) => s.clone(),
        (Some(s), _) => {
            return Err(Error::Usage(format!(
                "no score {s:?} in the run; it has: {}",
                names.join(", ")
            )));
        }
        (None, [only]) => only.clone(),
        (None, _) if names.iter().any(|n| n == JACCARD_ESTIMATE) => JACCARD_ESTIMATE.to_owned(),
        (None, _) => {
            return Err(Error::Usage(format!(
                "the run has several scores ({}); choose one with --score",
                names.join(", ")
            )));
        }
    };
    if run.summary.left_out_candidates() {
        outln!(to report;
            "the run was written with --candidates none: a threshold below its own ({}) is \
             judged on its confirmed pairs alone, not on what it would confirm; run it again \
             without that flag to sweep lower\n",
            run.summary.threshold
        );
    }
    if names.len() > 1 || evidence {
        let others: Vec<String> = names.iter().filter(|n| **n != score).cloned().collect();
        outln!(to report;
            "thresholding {score} alone{}; the run's own rule{} weighs more than that one \
             score, so a row can differ from `neardup eval` of the run at that threshold\n",
            match others.is_empty() {
                true => String::new(),
                false => format!(" (the run also stores {})", others.join(", ")),
            },
            match evidence {
                true => " (the evidence rule: containment, titles, numbers, short texts)",
                false => "",
            }
        );
    }
    let points = sweep_scores(
        &truth,
        &pairs,
        &score,
        &thresholds(args.from, args.to, args.step),
        args.predicted,
    );
    outln!(to report;
        "{:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "threshold", "pairs", "accuracy", "macro-F1", "P dup", "R dup"
    );
    for p in &points {
        outln!(to report;
            "{:>9.3} {:>9} {:>9.4} {:>9.4} {:>9.4} {:>9.4}",
            p.threshold, p.pairs, p.accuracy, p.macro_f1, p.dup_precision, p.dup_recall
        );
    }
    if let Some(top) = best(&points) {
        outln!(to report;
            "\nbest {score} threshold by macro-F1: {:.3} (macro-F1 {:.4}, accuracy {:.4}); confirm it on another labelled set",
            top.threshold, top.macro_f1, top.accuracy
        );
    }
    if let Some(path) = &args.json {
        write_json_pretty(
            path,
            &serde_json::json!({ "score": score, "points": points }),
        )?;
    }
    Ok(())
}

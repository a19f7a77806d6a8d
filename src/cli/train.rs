//! `neardup train`: fit the learned confirm rule to labelled duplicates.

use std::path::{Path, PathBuf};

use clap::Args;

use super::settings::MethodFlags;
use crate::confirm::{FEATURES, LEARNED_THRESHOLD, LearnedModel};
use crate::error::Result;
use crate::pipeline::{TrainingData, TwoStageConfig, train};

/// Fit the learned rule (`--match meaning`) to labelled duplicates: every candidate the
/// two-stage search finds in each labelled file is a training pair, labelled by whether the
/// labels join its records. Writes a model file for `--confirm-model`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    neardup train --truth labelled.jsonl --out model.json\n  \
    neardup dedup corpus.jsonl --match meaning --confirm-model model.json --out out/\n  \
    neardup train --truth a.jsonl --truth b.jsonl --save-pairs pairs/ --out model.json\n  \
    neardup train --pairs pairs/a.jsonl.pairs.json --out model-a.json\n  \
    neardup train --labels answers.jsonl --corpus corpus.jsonl --out model.json\n  \
    neardup train --labels pairs.csv --corpus corpus.jsonl --out model.json\n  \
    neardup train --labels answers.jsonl --corpus corpus.jsonl --prior shipped --out model.json")]
pub struct TrainArgs {
    /// A labelled corpus in the CORE layout (core_id, labelled_duplicates, and the text
    /// fields): its records are searched as `dedup` would, and its labels mark each candidate.
    #[arg(long, value_parser = crate::settings::RecordedPath)]
    truth: Vec<PathBuf>,
    /// Candidate pairs kept by an earlier --save-pairs, fitted on without searching again.
    #[arg(long)]
    pairs: Vec<PathBuf>,
    /// Labels of pairs: JSON Lines (id_a, id_b, duplicate) as `neardup label` writes them, or
    /// a .csv / .tsv with those columns (duplicate: true/false, 1/0, yes/no); each pair must be
    /// a candidate of the corpus given with --corpus.
    #[arg(long, requires = "corpus")]
    labels: Vec<PathBuf>,
    /// The corpus --labels label.
    #[arg(long, value_parser = crate::settings::RecordedPath)]
    corpus: Option<PathBuf>,
    /// Keep each labelled file's candidate pairs in this folder (NAME.pairs.json).
    #[arg(long)]
    save_pairs: Option<PathBuf>,
    /// Start from this model (a model file, or `shipped`: the one fitted on the paraphrase
    /// domains): the labels move it as far as they are evidence against it, so tens of labels
    /// are enough. Without it, the model is fitted from nothing.
    #[arg(long, value_name = "MODEL")]
    prior: Option<PathBuf>,
    /// Where the model file goes.
    #[arg(long)]
    out: PathBuf,
    #[command(flatten)]
    input: crate::pipeline::InputSpec,
    #[command(flatten)]
    flags: MethodFlags,
}

pub fn run(args: TrainArgs, models: &Path) -> Result<()> {
    args.flags.refuse_dedup_only("train")?;
    let config: TwoStageConfig = args.flags.config()?;
    let prior = args.prior.as_deref().map(LearnedModel::named).transpose()?;
    let data = TrainingData {
        prior: prior.as_ref(),
        truths: &args.truth,
        saved: &args.pairs,
        labels: &args.labels,
        corpus: args.corpus.as_deref(),
        save_pairs: args.save_pairs.as_deref(),
        input: &args.input,
        config: &config,
    };
    let model = train(&data, models)?;
    model.save(&args.out)?;
    for fitted in &model.fitted_on {
        outln!(
            "{}: {} candidate pairs, {} of them labelled duplicates",
            fitted.truth,
            fitted.pairs,
            fitted.duplicates
        );
    }
    outln!("{}", describe(&model));
    outln!(
        "wrote {}: use it with --match meaning --confirm-model {}",
        args.out.display(),
        args.out.display()
    );
    Ok(())
}

/// The model's weights, for people.
fn describe(model: &LearnedModel) -> String {
    use std::fmt::Write;
    let mut out = format!(
        "weights (on standardised features; a pair is a duplicate where the log-odds reach 0, \
         probability {LEARNED_THRESHOLD})\n  {:<18} {:>8}\n",
        "(intercept)",
        format!("{:+.3}", model.intercept)
    );
    for (name, weight) in FEATURES.iter().zip(&model.weights) {
        let _ = writeln!(out, "  {name:<18} {weight:>+8.3}");
    }
    out.trim_end().to_owned()
}

//! `neardup eval`: score a run's output against labelled duplicates.

use std::path::PathBuf;

use clap::Args;

use crate::error::Result;
use crate::eval::{Predicted, Truth, evaluate, load_predictions, render_table};
use crate::io::write_json_pretty;

/// Score a dedup output folder against ground truth (CORE 2020 metrics).
#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  neardup eval --truth data/bibdedupe-sample.jsonl --pred out/ --json out/eval.json"
)]
pub struct EvalArgs {
    /// Ground truth JSONL (CORE layout: core_id, labelled_duplicates, cat).
    #[arg(long)]
    truth: PathBuf,
    /// Output folder of `neardup dedup`.
    #[arg(long)]
    pred: PathBuf,
    /// Also write the metrics as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// A document's predicted duplicates: the rest of its group, or its confirmed pair partners.
    #[arg(long, value_enum, default_value_t = Predicted::Groups)]
    predicted: Predicted,
    /// Id field of the truth file.
    #[arg(long, default_value = "core_id")]
    id_field: String,
}

pub fn run(args: EvalArgs) -> Result<()> {
    let truth = Truth::load(&args.truth, &args.id_field)?;
    let predicted = load_predictions(&args.pred, args.predicted)?;
    let evaluation = evaluate(&truth, &predicted);
    print!("{}", render_table(&evaluation));
    if let Some(path) = &args.json {
        write_json_pretty(path, &evaluation)?;
    }
    Ok(())
}

//! Scoring a run against labelled duplicates, with the CORE Deduplication 2020 metrics.
//!
//! For each labelled document `d`: `L(d)` its labelled duplicates, `P(d)` its predicted ones
//! (by default the other members of its predicted group; with [`Predicted::Pairs`] its confirmed
//! pair partners).
//! - `Correct(d) = [P(d) = L(d)]`, accuracy = mean of Correct;
//! - `Recall(d) = |P∩L|/|L|` (1 when `L` is empty), `Precision(d) = |P∩L|/|P|` (0 when `P` is
//!   empty), averaged as `mean_recall` and `mean_precision`;
//! - class of `d`: TP if `P` and `L` are non-empty and `L ⊆ P`; FP if `P` is non-empty
//!   otherwise; FN if `P` is empty and `L` is not; TN if both are empty. The duplicate class's
//!   precision, recall and F1 come from these counts, the non-duplicate class's from the inverse
//!   labelling (TP↔TN, FP↔FN); macro-F1 is the mean of the two F1 scores (the true mean of
//!   F1s, not the mean of precisions that one public script prints under that name).

mod html;
mod metrics;
mod predictions;
mod report;
mod sweep;
mod truth;

pub use html::{ReportInput, write_report};
pub use metrics::{ClassMetrics, CorrectFalse, Evaluation, Scores, evaluate};
pub use predictions::Predictions;
pub use report::render_table;
pub use sweep::{SweepPoint, best, sweep, thresholds};
pub use truth::{Predicted, Truth, TruthDoc, load_foreign_groups, load_predictions};

//! The evaluation as a table for people.

use std::fmt::Write;

use super::metrics::{Evaluation, Scores};

/// Renders the overall scores, the per-`cat` scores and the notebook's correct / false table
/// per number of labelled duplicates.
pub fn render_table(e: &Evaluation) -> String {
    let mut out = String::new();
    let o = &e.overall;
    let _ = writeln!(out, "documents scored   {}", o.documents);
    let _ = writeln!(out, "accuracy           {:.4}", o.accuracy);
    let _ = writeln!(
        out,
        "macro-F1           {:.4}  (mean of the two classes' F1)",
        o.macro_f1
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<10} {:>9} {:>9} {:>9} {:>7} {:>7} {:>7} {:>7}",
        "class", "precision", "recall", "F1", "TP", "FP", "TN", "FN"
    );
    for (name, c) in [("dup", &o.dup), ("non_dup", &o.non_dup)] {
        let _ = writeln!(
            out,
            "{:<10} {:>9.4} {:>9.4} {:>9.4} {:>7} {:>7} {:>7} {:>7}",
            name, c.precision, c.recall, c.f1, c.tp, c.fp, c.tn, c.fn_
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<14} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "cat", "documents", "accuracy", "macro-F1", "P dup", "R dup"
    );
    for (cat, s) in &e.by_cat {
        cat_row(&mut out, cat, s);
    }
    let _ = writeln!(
        out,
        "(-: not defined: a cat with one class has no macro-F1, P dup needs predicted duplicates, \
         R dup labelled ones)"
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<14} {:>9} {:>9}",
        "# duplicates", "correct", "false"
    );
    for (n, cf) in &e.by_num_duplicates {
        let _ = writeln!(out, "{:<14} {:>9} {:>9}", n, cf.correct, cf.r#false);
    }
    if e.predicted_not_in_truth > 0 {
        let _ = writeln!(
            out,
            "\nnote: {} predicted ids are not in the truth file (they count as wrong predictions)",
            e.predicted_not_in_truth
        );
    }
    out
}

fn cat_row(out: &mut String, cat: &str, s: &Scores) {
    let d = &s.dup;
    let defined = |ok: bool, value: f64| {
        if ok {
            format!("{value:.4}")
        } else {
            "-".to_owned()
        }
    };
    let labelled_dup = d.tp + d.fn_ > 0;
    let labelled_non_dup = d.tn + d.fp > 0;
    let _ = writeln!(
        out,
        "{:<14} {:>9} {:>9.4} {:>9} {:>9} {:>9}",
        cat,
        s.documents,
        s.accuracy,
        defined(labelled_dup && labelled_non_dup, s.macro_f1),
        defined(d.tp + d.fp > 0, d.precision),
        defined(labelled_dup, d.recall)
    );
}
